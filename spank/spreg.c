/* spreg.c - the running containers of a node, per user (spreg.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spreg.h"

#define REG_ROOT "/run/ctrun-spank"
#define REG_MAGIC "ctrun-spank-reg 1 "
#define REG_MAX (4u << 20)

int sp_reg_dir(uid_t uid, char *out, size_t size, struct err *e)
{
	char host[256] = "";
	int n;

	if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == '\0' || strchr(host, '/') != NULL)
		return err_sys(e, EXIT_CTRUN, "host name");
	n = snprintf(out, size, "%s/%s/%u", REG_ROOT, host, (unsigned)uid);
	if (n < 0 || (size_t)n >= size)
		return err_set(e, EXIT_CTRUN, "%s: path too long", REG_ROOT);
	return 0;
}

/* A directory made or found: not a link, owned by owner, mode as given. */
static int own_dir(const char *path, uid_t owner, gid_t group, mode_t mode, struct err *e)
{
	struct stat st;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return err_sys(e, EXIT_CTRUN, "mkdir %s", path);
	if (lstat(path, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, EXIT_CTRUN, "%s is not a directory", path);
	if ((st.st_uid != owner || st.st_gid != group) && chown(path, owner, group) < 0)
		return err_sys(e, EXIT_CTRUN, "chown %s", path);
	if ((st.st_mode & 07777) != mode && chmod(path, mode) < 0)
		return err_sys(e, EXIT_CTRUN, "chmod %s", path);
	return 0;
}

int sp_reg_prepare(uid_t uid, gid_t gid, struct err *e)
{
	char dir[512], *slash;

	if (sp_reg_dir(uid, dir, sizeof(dir), e) < 0)
		return -1;
	/* Parents root's (0755), the last one the user's (0700). */
	for (slash = strchr(dir + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (own_dir(dir, 0, 0, 0755, e) < 0)
			return -1;
		*slash = '/';
	}
	return own_dir(dir, uid, gid, 0700, e);
}

unsigned long long sp_reg_starttime(long pid)
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

char *sp_reg_format(const struct sp_reg *r, size_t *len)
{
	const char *cwd = r->cwd != NULL ? r->cwd : "/";
	size_t cap = 4096;
	char *buf = malloc(cap);
	int n;

	if (buf == NULL)
		return NULL;
	n = snprintf(buf, cap, REG_MAGIC "%ld %llu\n", r->pid, r->start);
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

int sp_reg_parse(const char *buf, size_t len, struct sp_reg *r, struct err *e)
{
	const char *end = buf + len, *p, *nl = memchr(buf, '\n', len);
	size_t l;

	memset(r, 0, sizeof(*r));
	if (nl == NULL || len < strlen(REG_MAGIC) || memcmp(buf, REG_MAGIC, strlen(REG_MAGIC)) != 0 ||
	    sscanf(buf + strlen(REG_MAGIC), "%ld %llu", &r->pid, &r->start) != 2 || r->pid <= 1)
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
	sp_reg_free(r);
	return err_set(e, EXIT_CTRUN, "a running container's record is cut short");
}

void sp_reg_free(struct sp_reg *r)
{
	free(r->cwd);
	strv_free(&r->set);
	strv_free(&r->unset);
	memset(r, 0, sizeof(*r));
}

static int path_of(char *out, size_t size, const char *dir, const char *name, const char *suffix)
{
	int n = snprintf(out, size, "%s/%s%s", dir, name, suffix);

	return n < 0 || (size_t)n >= size || strchr(name, '/') != NULL ? -1 : 0;
}

int sp_reg_publish(const char *dir, const char *name, const struct sp_reg *r, struct err *e)
{
	char path[1024], tmp[1100];
	size_t len = 0;
	char *text = sp_reg_format(r, &len);
	int fd = -1, old;

	if (text == NULL)
		return err_sys(e, EXIT_CTRUN, "running container record");
	if (path_of(path, sizeof(path), dir, name, "") < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
		free(text);
		return err_set(e, EXIT_CTRUN, "%s/%s: bad name", dir, name);
	}
	/* Another live hold of that name: not ours to replace. */
	old = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (old >= 0) {
		bool live = flock(old, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;

		close(old);
		if (live) {
			free(text);
			return err_set(e, EXIT_CTRUN, "a container named %s is running on this node", name);
		}
	}
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || write(fd, text, len) != (ssize_t)len ||
	    rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		fd = -1;
	}
	free(text);
	return fd;
}

void sp_reg_unpublish(const char *dir, const char *name, int fd)
{
	char path[1024];

	if (fd < 0)
		return;
	if (path_of(path, sizeof(path), dir, name, "") == 0)
		unlink(path);
	close(fd);
}

int sp_reg_lookup(const char *dir, const char *name, uid_t uid, struct sp_reg *r, struct err *e)
{
	char path[1024], *buf = NULL;
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd, rv = 0;

	if (path_of(path, sizeof(path), dir, name, "") < 0)
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    (size_t)st.st_size > REG_MAX) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "%s: not a record of yours", path);
	}
	/* Nobody holds its lock: its step is gone. */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
		goto out;
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		rv = err_sys(e, EXIT_CTRUN, "%s", path);
		goto out;
	}
	while (len < (size_t)st.st_size &&
	       ((n = read(fd, buf + len, (size_t)st.st_size - len)) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			len += (size_t)n;
	if (sp_reg_parse(buf, len, r, e) < 0) {
		rv = -1;
		goto out;
	}
	/* The process it names, not another that took its pid. */
	if (sp_reg_starttime(r->pid) != r->start) {
		sp_reg_free(r);
		goto out;
	}
	rv = 1;
out:
	free(buf);
	close(fd);
	return rv;
}
