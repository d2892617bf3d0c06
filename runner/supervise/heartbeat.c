/* heartbeat.c - each worker's last progress (see heartbeat.h). */
#include "heartbeat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int progress_dir_make(const char *base, char *out, size_t size, struct err *e)
{
	if (xsnprintf(out, size, "%s/ctrun-hb.XXXXXX", base) < 0)
		return err_set(e, EXIT_CTRUN, "heartbeat directory under %s: path too long", base);
	if (mkdtemp(out) == NULL)
		return err_sys(e, EXIT_CTRUN, "heartbeat directory under %s", base);
	return 0;
}

void progress_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d != NULL && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d != NULL)
		closedir(d);
	rmdir(dir);
}

int progress_file(const char *dir, long rank, char *out, size_t size)
{
	return xsnprintf(out, size, "%s/rank-%ld", dir, rank);
}

int progress_init(struct progress *p, size_t n, const long *ranks, const char *dir,
		  struct err *e)
{
	long long now = mono_ms();

	memset(p, 0, sizeof(*p));
	p->n = n;
	p->last = calloc(n, sizeof(*p->last));
	p->file = calloc(n, sizeof(*p->file));
	p->mtime = calloc(n, sizeof(*p->mtime));
	p->started = calloc(n, sizeof(*p->started));
	if (p->last == NULL || p->file == NULL || p->mtime == NULL || p->started == NULL)
		return err_sys(e, EXIT_CTRUN, "progress");
	p->next_tick = now + PROGRESS_TICK_MS;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct stat st;
		int fd;

		p->last[i] = now;
		if (dir == NULL)
			continue;
		if (progress_file(dir, ranks[i], path, sizeof(path)) < 0)
			return err_set(e, EXIT_CTRUN, "heartbeat file in %s: path too long", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			return err_sys(e, EXIT_CTRUN, "heartbeat file %s", path);
		}
		close(fd);
		p->mtime[i] = st.st_mtim;
		if ((p->file[i] = strdup(path)) == NULL)
			return err_sys(e, EXIT_CTRUN, "progress");
	}
	return 0;
}

void progress_fini(struct progress *p)
{
	for (size_t i = 0; p->file != NULL && i < p->n; i++) {
		if (p->file[i] != NULL)
			unlink(p->file[i]);
		free(p->file[i]);
	}
	free(p->file);
	free(p->started);
	free(p->last);
	free(p->mtime);
	memset(p, 0, sizeof(*p));
}

void progress_saw(struct progress *p, size_t i)
{
	if (i < p->n) {
		p->last[i] = mono_ms();
		p->started[i] = true;
	}
}

void progress_poll(struct progress *p)
{
	long long now = mono_ms();

	for (size_t i = 0; i < p->n; i++) {
		struct stat st;

		/* lstat: a link a worker put in its place is never followed. */
		if (p->file == NULL || p->file[i] == NULL || lstat(p->file[i], &st) < 0)
			continue;
		if (st.st_mtim.tv_sec != p->mtime[i].tv_sec ||
		    st.st_mtim.tv_nsec != p->mtime[i].tv_nsec) {
			p->mtime[i] = st.st_mtim;
			p->last[i] = now;
			p->started[i] = true;
		}
	}
}

long long progress_silent(const struct progress *p, size_t i)
{
	long long d = i < p->n ? mono_ms() - p->last[i] : 0;

	return d > 0 ? d : 0;
}

bool progress_started(const struct progress *p, size_t i)
{
	return i < p->n && p->started[i];
}
