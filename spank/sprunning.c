/* sprunning.c - the running containers of a node, per user (sprunning.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sprunning.h"
#include "util.h"

#define REC_BASE "ctrun-spank"

/* /run, or a test's directory (sp_running_use_parent). */
static const char *running_parent = "/run";
#define REC_PARENT running_parent

void sp_running_use_parent(const char *dir)
{
	running_parent = dir;
}
#define REC_MAGIC "ctrun-spank-reg 1 "

int sp_running_dir(uid_t uid, char *out, size_t size, struct err *e)
{
	char host[256] = "";
	int n;

	if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == '\0' || strchr(host, '/') != NULL ||
	    strcmp(host, ".") == 0 || strcmp(host, "..") == 0)
		return err_sys(e, EXIT_CTRUN, "host name");
	n = snprintf(out, size, "%s/%s/%s/%u", REC_PARENT, REC_BASE, host, (unsigned)uid);
	if (n < 0 || (size_t)n >= size)
		return err_set(e, EXIT_CTRUN, "%s/%s: path too long", REC_PARENT, REC_BASE);
	return 0;
}

/* Removes what is in the directory at dfd, never following a link: its
 * files, and (depth levels further down) its directories' (an earlier
 * layout's, a user's). */
static void empty_dir(int dfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd = dup(dfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0 || errno != EISDIR || depth == 0)
			continue;
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			empty_dir(sub, depth - 1);
			close(sub);
		}
		unlinkat(dfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* name in the directory at pfd: made or found, root's, a directory (not a
 * link), writable by root only, mode as given; one another user owns (the
 * user's directory of an earlier layout) is emptied and made anew.  Its
 * descriptor, or -1 with e. */
static int root_dir(int pfd, const char *name, mode_t mode, struct err *e)
{
	struct stat st;
	int fd;

	for (int tries = 0; tries < 2; tries++) {
		if (mkdirat(pfd, name, mode) < 0 && errno != EEXIST)
			return err_sys(e, EXIT_CTRUN, "mkdir %s", name);
		fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_sys(e, EXIT_CTRUN, "%s: not a directory of root's", name);
		if (fstat(fd, &st) < 0) {
			close(fd);
			return err_sys(e, EXIT_CTRUN, "%s", name);
		}
		if (st.st_uid == 0) {
			if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
				close(fd);
				return err_sys(e, EXIT_CTRUN, "chmod %s", name);
			}
			return fd;
		}
		empty_dir(fd, 1);
		close(fd);
		if (unlinkat(pfd, name, AT_REMOVEDIR) < 0)
			return err_sys(e, EXIT_CTRUN, "%s (another user's, from an earlier ctrun)", name);
	}
	return err_set(e, EXIT_CTRUN, "%s: not a directory of root's", name);
}

/* The user's directory's descriptor, its parents made (root's, 0755; the
 * last 0700), /run itself never changed; -1 with e. */
static int open_dir(uid_t uid, bool make, struct err *e)
{
	char host[256] = "", num[16];
	int run, base = -1, hfd = -1, ufd = -1, saved;

	if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == '\0' || strchr(host, '/') != NULL ||
	    strcmp(host, ".") == 0 || strcmp(host, "..") == 0)
		return err_sys(e, EXIT_CTRUN, "host name");
	snprintf(num, sizeof(num), "%u", (unsigned)uid);
	run = open(REC_PARENT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (run < 0)
		return err_sys(e, EXIT_CTRUN, "%s", REC_PARENT);
	if (make) {
		if ((base = root_dir(run, REC_BASE, 0755, e)) >= 0 &&
		    (hfd = root_dir(base, host, 0755, e)) >= 0)
			ufd = root_dir(hfd, num, 0700, e);
	} else {
		base = openat(run, REC_BASE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		hfd = base < 0 ? -1 : openat(base, host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		ufd = hfd < 0 ? -1 : openat(hfd, num, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ufd < 0)
			err_sys(e, EXIT_CTRUN, "%s/%s/%s/%s", REC_PARENT, REC_BASE, host, num);
	}
	saved = errno;
	close(run);
	if (base >= 0)
		close(base);
	if (hfd >= 0)
		close(hfd);
	errno = saved;
	return ufd;
}

/* Removes the records in the directory at dfd whose lock nobody holds
 * (their step died without removing them); returns how many are left. */
static size_t gc_records(int dfd)
{
	DIR *d;
	struct dirent *de;
	size_t left = 0;
	int fd = dup(dfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		int rfd;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rfd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (rfd >= 0 && flock(rfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
			left++;
		} else if (unlinkat(dfd, de->d_name, 0) < 0 && errno == EISDIR) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				empty_dir(sub, 0);
				close(sub);
			}
			unlinkat(dfd, de->d_name, AT_REMOVEDIR);
		}
		if (rfd >= 0)
			close(rfd);
	}
	closedir(d);
	return left;
}

int sp_running_prepare(uid_t uid, struct err *e)
{
	char host[256] = "";
	int ufd = open_dir(uid, true, e), hfd;
	DIR *d;
	struct dirent *de;

	if (ufd < 0)
		return -1;
	close(ufd);
	/* The node's stale records, every user's (a step killed with its
	 * slurmstepd).  The users' directories stay (root's, empty): one
	 * removed under a step that is about to publish would fail it. */
	if (gethostname(host, sizeof(host) - 1) < 0)
		return 0;
	hfd = open(REC_PARENT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hfd >= 0) {
		int b = openat(hfd, REC_BASE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(hfd);
		hfd = b;
	}
	if (hfd >= 0) {
		int h = openat(hfd, host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(hfd);
		hfd = h;
	}
	if (hfd < 0 || (d = fdopendir(hfd)) == NULL) {
		if (hfd >= 0)
			close(hfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		char *end;
		int sub;

		strtoul(de->d_name, &end, 10);
		if (*end != '\0' || de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		gc_records(sub);
		close(sub);
	}
	closedir(d);
	return 0;
}

unsigned long long sp_running_starttime(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After "(comm)": state is field 3, starttime field 22. */
	p = strrchr(buf, ')');
	if (p == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			  "%*d %*d %llu", &start) != 1)
		return 0;
	return start;
}

/* Appends len bytes to the growing buffer. */
static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t l)
{
	if (*len + l > *cap) {
		char *more = realloc(*buf, (*len + l) * 2);

		if (more == NULL)
			return -1;
		*buf = more;
		*cap = (*len + l) * 2;
	}
	memcpy(*buf + *len, p, l);
	*len += l;
	return 0;
}

/* The entries of s, each with its NUL, then an empty one. */
static int append_list(char **buf, size_t *len, size_t *cap, const struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (append(buf, len, cap, s->v[i], strlen(s->v[i]) + 1) < 0)
			return -1;
	return append(buf, len, cap, "", 1);
}

char *sp_running_format(const struct sp_running *r, size_t *len)
{
	const char *cwd = r->cwd != NULL ? r->cwd : "/";
	size_t cap = 4096;
	char *buf = malloc(cap);
	int n;

	if (buf == NULL)
		return NULL;
	n = snprintf(buf, cap, REC_MAGIC "%ld %llu\n", r->pid, r->start);
	*len = n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
	if (*len == 0 || append(&buf, len, &cap, cwd, strlen(cwd) + 1) < 0 ||
	    append_list(&buf, len, &cap, &r->set) < 0 || append_list(&buf, len, &cap, &r->unset) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A list of NUL-terminated entries up to an empty one, from *p. */
static int take_list(const char **p, const char *end, struct strv *out)
{
	while (*p < end) {
		size_t l = strnlen(*p, (size_t)(end - *p));

		if (*p + l >= end)
			return -1;
		if (l == 0) {
			(*p)++;
			return 0;
		}
		if (strv_push(out, *p) < 0)
			return -1;
		*p += l + 1;
	}
	return -1;
}

int sp_running_parse(const char *buf, size_t len, struct sp_running *r, struct err *e)
{
	const char *end = buf + len, *p, *nl = memchr(buf, '\n', len);
	char head[96]; /* its first line, ended: buf need not be */
	size_t l;

	memset(r, 0, sizeof(*r));
	if (nl == NULL || (size_t)(nl - buf) >= sizeof(head) || len < strlen(REC_MAGIC) ||
	    memcmp(buf, REC_MAGIC, strlen(REC_MAGIC)) != 0)
		return err_set(e, EXIT_CTRUN, "not a running container's record");
	memcpy(head, buf, (size_t)(nl - buf));
	head[nl - buf] = '\0';
	if (sscanf(head + strlen(REC_MAGIC), "%ld %llu", &r->pid, &r->start) != 2 || r->pid <= 1)
		return err_set(e, EXIT_CTRUN, "not a running container's record");
	p = nl + 1;
	l = strnlen(p, (size_t)(end - p));
	if (p + l >= end || (r->cwd = strndup(p, l)) == NULL)
		goto bad;
	p += l + 1;
	if (take_list(&p, end, &r->set) < 0 || take_list(&p, end, &r->unset) < 0)
		goto bad;
	return 0;
bad:
	sp_running_free(r);
	return err_set(e, EXIT_CTRUN, "a running container's record is cut short");
}

void sp_running_free(struct sp_running *r)
{
	free(r->cwd);
	strv_free(&r->set);
	strv_free(&r->unset);
	memset(r, 0, sizeof(*r));
}

/* A record's name: a plain file name, never "." or ".." or hidden. */
static bool plain_name(const char *name)
{
	return name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL &&
	       strlen(name) < 256;
}

int sp_running_publish(uid_t uid, const char *name, const struct sp_running *r, struct err *e)
{
	char tmp[64], path[64];
	size_t len = 0;
	char *text = NULL;
	int dfd = -1, fd = -1, old;

	if (!plain_name(name))
		return err_set(e, EXIT_CTRUN, "%s: not a record's name", name);
	dfd = open_dir(uid, true, e);
	if (dfd < 0)
		return -1;
	text = sp_running_format(r, &len);
	if (text == NULL || len > SP_RUNNING_MAX) {
		err_set(e, EXIT_CTRUN, "the container's record would be over %u bytes (its "
			"environment): %s cannot be joined by name", SP_RUNNING_MAX, name);
		goto out;
	}
	/* Another live hold of that name: not ours to replace. */
	old = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (old >= 0) {
		bool live = flock(old, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;

		close(old);
		if (live) {
			err_set(e, EXIT_CTRUN, "a container named %s is running on this node", name);
			goto out;
		}
	}
	if (gc_records(dfd) >= SP_RUNNING_RECORDS) {
		err_set(e, EXIT_CTRUN, "%u containers of yours run on this node: %s cannot be "
			"joined by name", SP_RUNNING_RECORDS, name);
		goto out;
	}
	/* Locked before it has a name: no one ever sees it unlocked. */
	fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	snprintf(tmp, sizeof(tmp), ".new.%ld", (long)getpid());
	unlinkat(dfd, tmp, 0);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || write_all(fd, text, len) < 0 ||
	    linkat(AT_FDCWD, path, dfd, tmp, AT_SYMLINK_FOLLOW) < 0 ||
	    renameat(dfd, tmp, dfd, name) < 0) {
		err_sys(e, EXIT_CTRUN, "the record of %s", name);
		unlinkat(dfd, tmp, 0);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
out:
	free(text);
	close(dfd);
	return fd;
}

void sp_running_unpublish(uid_t uid, const char *name, int fd)
{
	struct err e = { 0 };
	struct stat a, b;
	int dfd;

	if (fd < 0)
		return;
	dfd = plain_name(name) ? open_dir(uid, false, &e) : -1;
	/* Only the file this step published (a later step may have replaced
	 * a name whose holder died). */
	if (dfd >= 0 && fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(dfd, name, 0);
	if (dfd >= 0)
		close(dfd);
	close(fd);
}

int sp_running_lookup(uid_t uid, const char *name, struct sp_running *r, struct err *e)
{
	char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int dfd, fd, rv = 0;

	if (!plain_name(name))
		return 0;
	dfd = open_dir(uid, false, e);
	if (dfd < 0 && errno == ENOENT)
		memset(e, 0, sizeof(*e));
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "the record of %s", name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (size_t)st.st_size > SP_RUNNING_MAX) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "the record of %s is not root's", name);
	}
	/* Nobody holds its lock: its step is gone. */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
		goto out;
	buf = read_fd_max(fd, (size_t)st.st_size, &len);
	if (buf == NULL) {
		rv = err_sys(e, EXIT_CTRUN, "the record of %s", name);
		goto out;
	}
	if (sp_running_parse(buf, len, r, e) < 0) {
		rv = -1;
		goto out;
	}
	/* The process it names, not another that took its pid. */
	if (sp_running_starttime(r->pid) != r->start) {
		sp_running_free(r);
		goto out;
	}
	rv = 1;
out:
	free(buf);
	close(fd);
	return rv;
}
