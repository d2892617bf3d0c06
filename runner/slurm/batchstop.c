/* batchstop.c - the notes a node's ctrun leaves for the batch-mode ctrun
 * when it was signalled from outside (see batchstop.h). */
#include "batchstop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topology.h"
#include "util.h"

int batchstop_dir_make(char *out, size_t size, struct err *e)
{
	const char *tmp = getenv("TMPDIR");

	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	if (xsnprintf(out, size, "%s/ctrun-stops.XXXXXX", tmp) < 0)
		return err_set(e, EXIT_CTRUN, "TMPDIR %s: path too long", tmp);
	/* mkdtemp: a new name, mode 0700, so no one else can have made it. */
	if (mkdtemp(out) == NULL)
		return err_sys(e, EXIT_CTRUN, "making %s (set TMPDIR to a writable directory)", out);
	return 0;
}

void batchstop_note(int sig, const char *host)
{
	const char *dir = getenv(BATCHSTOP_ENV), *name = sigabbrev_np(sig);
	char line[320];
	struct stat st;
	int dfd = -1, fd = -1;
	size_t len;

	if (dir == NULL || dir[0] != '/')
		return;
	/* The file's name: one note per node, host names with no '/'. */
	if (host == NULL || host[0] == '\0' || host[0] == '.' || strchr(host, '/') != NULL)
		host = "node";
	if (xsnprintf(line, sizeof(line), "%s %s\n", name != NULL ? name : "?", host) < 0)
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return; /* not the batch script's node, nor a shared /tmp */
	/* Only into the batch ctrun's own directory: one someone else made
	 * under that name on this node is left alone. */
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		goto out;
	fd = openat(dfd, host, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	len = strlen(line);
	if (write(fd, line, len) != (ssize_t)len)
		unlinkat(dfd, host, 0); /* a cut note would name no signal */
out:
	if (fd >= 0)
		close(fd);
	close(dfd);
}

void batchstop_cb(void *topo, int sig)
{
	const struct topo *t = topo;

	batchstop_note(sig, t->host);
}

/* A note, read-only, never through a symlink. */
static FILE *note_open(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	if (f == NULL && fd >= 0)
		close(fd);
	return f;
}

int batchstop_read(const char *dir, char *host, size_t hsize, char *sig, size_t ssize)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	if (d == NULL)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		char line[320] = "", *sp;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		f = note_open(dirfd(d), de->d_name);
		if (f == NULL)
			continue;
		if (fgets(line, sizeof(line), f) != NULL && (sp = strchr(line, ' ')) != NULL) {
			*sp++ = '\0';
			sp[strcspn(sp, "\n")] = '\0';
			snprintf(sig, ssize, "%s", line);
			snprintf(host, hsize, "%s", sp);
			found = 1;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

void batchstop_clear(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

void batchstop_remove(const char *dir)
{
	batchstop_clear(dir);
	rmdir(dir);
}
