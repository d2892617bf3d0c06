/* stagedir.c - the per-job private stage directory (see stagedir.h). */
#include "stagedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "privdir.h"
#include "step.h"
#include "strv.h"
#include "util.h"

#define RANDOM_HEX 16

int stagedir_name(char *buf, size_t size, uid_t uid, const char *job, struct err *e)
{
	unsigned char r[RANDOM_HEX / 2];
	char hex[RANDOM_HEX + 1];
	long n;

	if (parse_long(job, 0, LONG_MAX, &n) < 0)
		return err_set(e, EXIT_CTRUN, "staging: SLURM_JOB_ID '%s' is not a job id", job);
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return err_sys(e, EXIT_CTRUN, "staging: getrandom");
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	if (xsnprintf(buf, size, STAGEDIR_PREFIX "%u.%s.%s", (unsigned)uid, job, hex) < 0)
		return err_set(e, EXIT_CTRUN, "staging: directory name too long");
	return 0;
}

/* A run of decimal digits at *p (at most max of them, no sign), up to stop. */
static size_t digits(const char *p, char stop, size_t max)
{
	size_t n = strspn(p, "0123456789");

	return n > 0 && n <= max && p[n] == stop ? n : 0;
}

bool stagedir_name_parse(const char *name, uid_t *uid, char *job, size_t jsize)
{
	const char *p = name;
	size_t n, j;
	long u;
	char num[16];

	if (strncmp(p, STAGEDIR_PREFIX, strlen(STAGEDIR_PREFIX)) != 0)
		return false;
	p += strlen(STAGEDIR_PREFIX);
	n = digits(p, '.', 10);
	if (n == 0)
		return false;
	memcpy(num, p, n);
	num[n] = '\0';
	if (parse_long(num, 0, (long)(uid_t)-1 - 1, &u) < 0)
		return false;
	p += n + 1;
	j = digits(p, '.', 19);
	if (j == 0 || j >= jsize)
		return false;
	if (strlen(p + j + 1) != RANDOM_HEX || strspn(p + j + 1, "0123456789abcdef") != RANDOM_HEX)
		return false;
	memcpy(job, p, j);
	job[j] = '\0';
	*uid = (uid_t)u;
	return true;
}

/* Removes pfd/name and its files when it is a directory of the caller's
 * that no one else can enter (so nothing in it was put there by another
 * user); *bytes grows by their sizes.  0 also when it is missing or not
 * such a directory: that is not ours to remove. */
static int remove_one(int pfd, const char *name, unsigned long long *bytes, struct err *e)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int rv = -1;

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP
			       ? 0
			       : err_sys(e, EXIT_CTRUN, "staging: opening %s", name);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "staging: %s", name);
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		close(fd);
		return 0;
	}
	dir = fdopendir(fd);
	if (dir == NULL) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "staging: reading %s", name);
	}
	errno = 0;
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			*bytes += (unsigned long long)st.st_size;
		if (unlinkat(fd, d->d_name, 0) < 0 && errno != ENOENT) {
			err_sys(e, EXIT_CTRUN, "staging: removing %s/%s", name, d->d_name);
			goto out;
		}
		errno = 0;
	}
	if (errno != 0) {
		err_sys(e, EXIT_CTRUN, "staging: reading %s", name);
		goto out;
	}
	if (unlinkat(pfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		err_sys(e, EXIT_CTRUN, "staging: removing %s", name);
		goto out;
	}
	rv = 0;
out:
	closedir(dir);
	return rv;
}

int stagedir_remove(const char *dir, const char *name, struct err *e)
{
	unsigned long long bytes = 0;
	int pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rv;

	if (pfd < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "staging: %s", dir);
	rv = remove_one(pfd, name, &bytes, e);
	if (rv < 0)
		err_wrap(e, "%s", dir);
	close(pfd);
	return rv;
}

int stagedir_gc(const char *dir, size_t *removed, unsigned long long *bytes, struct err *e)
{
	struct strv mine = { 0 }, live = { 0 };
	uid_t me = geteuid();
	int pfd = -1, rv = -1;
	struct dirent *d;
	DIR *dp;

	*removed = 0;
	*bytes = 0;
	dp = opendir(dir);
	if (dp == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "staging: reading %s", dir);
	pfd = dirfd(dp);
	while ((d = readdir(dp)) != NULL) {
		char job[32];
		uid_t uid;

		if (stagedir_name_parse(d->d_name, &uid, job, sizeof(job)) && uid == me &&
		    strv_push(&mine, d->d_name) < 0) {
			err_sys(e, EXIT_CTRUN, "staging");
			goto out;
		}
	}
	/* Slurm is asked only when there is something to decide; when it
	 * cannot answer, every job may still be running. */
	if (mine.n == 0 || user_live_jobs(me, &live) < 0) {
		rv = 0;
		goto out;
	}
	for (size_t i = 0; i < mine.n; i++) {
		char job[32];
		uid_t uid;

		stagedir_name_parse(mine.v[i], &uid, job, sizeof(job));
		if (strv_find(&live, job) >= 0)
			continue;
		if (remove_one(pfd, mine.v[i], bytes, e) < 0) {
			err_wrap(e, "%s", dir);
			goto out;
		}
		(*removed)++;
	}
	rv = 0;
out:
	strv_free(&mine);
	strv_free(&live);
	closedir(dp);
	return rv;
}

int stagedir_prepare(const char *dir, const char *name, bool *found, struct err *e)
{
	char path[4096];
	unsigned long long bytes;
	struct err ignored = { 0 };
	struct stat st;
	size_t removed;

	if (stat(dir, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "stage directory %s", dir);
	/* Whoever may rename or remove entries of dir could swap the job's
	 * directory for one of theirs between this check and the copy. */
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0))
		return err_set(e, EXIT_CTRUN, "stage directory %s must be a directory of root's or "
			       "yours that others cannot write to, or a sticky one like /tmp (it is "
			       "uid %u, mode %04o): set [cache] stage_dir", dir,
			       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	/* Best effort: a stale copy that stays is no reason not to stage. */
	stagedir_gc(dir, &removed, &bytes, &ignored);
	if (xsnprintf(path, sizeof(path), "%s/%s", dir, name) < 0)
		return err_set(e, EXIT_CTRUN, "stage directory %s: path too long", dir);
	/* mkdir never follows a symlink; what exists already must be a
	 * directory of ours that no one else can enter (privdir.h). */
	*found = mkdir(path, 0700) < 0 && errno == EEXIST;
	if (privdir_make(path, PRIVDIR_UNREADABLE, e) < 0)
		return err_wrap(e, "staging refused");
	return 0;
}
