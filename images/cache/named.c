/* named.c - named containers in the user's node cache (see named.h): the
 * name check, the record and the doors' names (pure), the gate and the
 * users' lock, making, checking, listing and removing them. */
#include "named.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cache_int.h"
#include "rootpath.h"
#include "util.h"

/* The record is small: an identity and a path. */
#define RECORD_MAX 8192

int named_check_name(const char *name, struct err *e)
{
	size_t n = strlen(name);

	if (n == 0)
		return err_set(e, EXIT_USAGE, "--name: empty (a name is letters, digits, '.', '_' "
			       "and '-')");
	if (n > NAMED_NAME_MAX)
		return err_set(e, EXIT_USAGE, "--name %.*s...: longer than %d bytes", 16, name,
			       NAMED_NAME_MAX);
	if (name[0] == '.' || name[0] == '-')
		return err_set(e, EXIT_USAGE, "--name %s: must not start with '%c' (a name is "
			       "letters, digits, '.', '_' and '-')", name, name[0]);
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-')
			continue;
		if (ch == '/')
			return err_set(e, EXIT_USAGE, "--name %s: a name is not a path (no '/'; it "
				       "is kept in the node cache)", name);
		return err_set(e, EXIT_USAGE, "--name: byte 0x%02x at position %zu is not allowed "
			       "(a name is letters, digits, '.', '_' and '-')", ch,
			       (size_t)(p - name) + 1);
	}
	return 0;
}

int named_record_format(const char *identity, const char *image, char *buf, size_t size)
{
	return xsnprintf(buf, size, "%s\n%s\n", identity, image) < 0 ? -1 : 0;
}

int named_record_parse(const char *text, size_t len, char *identity, size_t isize, char *image,
		       size_t imsize, struct err *e)
{
	const char *nl = memchr(text, '\n', len);
	size_t il, ml;

	if (nl == NULL || nl == text)
		return err_set(e, EXIT_CTRUN, "no image identity");
	il = (size_t)(nl - text);
	for (size_t i = 0; i < il; i++)
		if (!((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= '0' && text[i] <= '9') ||
		      text[i] == '-'))
			return err_set(e, EXIT_CTRUN, "the image identity has a byte 0x%02x",
				       (unsigned char)text[i]);
	ml = len - il - 1;
	if (ml > 0 && nl[ml] == '\n') /* the last byte: the record's own newline */
		ml--;
	if (il >= isize || ml >= imsize || memchr(nl + 1, '\0', ml) != NULL)
		return err_set(e, EXIT_CTRUN, "record too long or with a NUL byte");
	memcpy(identity, text, il);
	identity[il] = '\0';
	memcpy(image, nl + 1, ml);
	image[ml] = '\0';
	return 0;
}

/* CONTAINERS = <cache>/containers, made 0700 when missing; the cache root
 * itself is checked by cache_root_check (ours, 0700). */
static int containers_dir(const struct cache_cfg *c, char *out, size_t size, struct err *e)
{
	struct stat st;

	if (c->shared)
		return err_set(e, EXIT_USAGE, "named containers live in a user's own cache, not "
			       "in the node's shared one");
	if (cache_root_check(c, e) < 0)
		return -1;
	if (xsnprintf(out, size, "%s/containers", c->dir) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return err_sys(e, EXIT_CTRUN, "%s", out);
	if (lstat(out, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", out);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return err_set(e, EXIT_CTRUN, "%s is not a directory of yours", out);
	return 0;
}

static int read_record(const char *dir, char *identity, size_t isize, char *image,
		       size_t imsize, struct err *e)
{
	char path[PATH_MAX], buf[RECORD_MAX];
	ssize_t r;
	int fd;

	if (xsnprintf(path, sizeof(path), "%s/image", dir) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	r = read(fd, buf, sizeof(buf));
	close(fd);
	if (r < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (named_record_parse(buf, (size_t)r, identity, isize, image, imsize, e) < 0)
		return err_wrap(e, "%s", path);
	return 0;
}

/* Makes DIR (upper, work, the record) under a temporary name, then renames. */
static int make(const struct named_req *q, const char *dir, struct err *e)
{
	char tmp[PATH_MAX], path[PATH_MAX + 16], host[256], rec[RECORD_MAX];
	int fd;

	cache_hostname(host, sizeof(host));
	if (xsnprintf(tmp, sizeof(tmp), "%s%s%s.%ld", dir, CACHE_TMP_TAG, host, (long)getpid()) < 0 ||
	    named_record_format(q->identity, q->image, rec, sizeof(rec)) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", dir);
	(void)remove_tree(tmp);
	if (mkdir(tmp, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	for (const char *const *d = (const char *const[]){ "upper", "work", "merged", NULL }; *d;
	     d++) {
		if (xsnprintf(path, sizeof(path), "%s/%s", tmp, *d) < 0 || mkdir(path, 0755) < 0)
			goto fail;
	}
	if (xsnprintf(path, sizeof(path), "%s/image", tmp) < 0)
		goto fail;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	if (write_all(fd, rec, strlen(rec)) < 0 || fsync(fd) < 0) {
		close(fd);
		goto fail;
	}
	if (close(fd) < 0 || rename(tmp, dir) < 0)
		goto fail;
	return 0;
fail:
	err_sys(e, EXIT_CTRUN, "named container %s", tmp);
	(void)remove_tree(tmp);
	return -1;
}

/* Renames DIR away and removes it (under the caller's lock). */
static int remove_dir(const char *dir, struct err *e)
{
	char tmp[PATH_MAX], host[256];

	cache_hostname(host, sizeof(host));
	if (xsnprintf(tmp, sizeof(tmp), "%s%s%s.%ld.old", dir, CACHE_TMP_TAG, host,
		      (long)getpid()) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", dir);
	if (rename(dir, tmp) < 0)
		return err_sys(e, EXIT_CTRUN, "removing %s", dir);
	if (remove_tree(tmp) < 0)
		return err_sys(e, EXIT_CTRUN, "removing %s", tmp);
	return 0;
}

/* Opens locks/container-NAME.SUFFIX (made when missing): the fd, or -1. */
static int open_lock(const char *locks, const char *name, const char *suffix, struct err *e)
{
	char path[PATH_MAX];
	int fd;

	if (xsnprintf(path, sizeof(path), "%s/container-%s.%s", locks, name, suffix) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", locks);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	return fd;
}

/* Why NAME's users' lock (fd) could not be had: who holds it, and why
 * that stops this run. */
static int busy(int fd, const char *name, const char *why, struct err *e)
{
	char who[128];

	if (errno != EWOULDBLOCK)
		return err_sys(e, EXIT_CTRUN, "--name %s: its lock", name);
	cache_lock_holder(fd, who, sizeof(who));
	return err_set(e, EXIT_CTRUN, "--name %s: in use by %s on this node (%s)", name, who, why);
}

/* Takes NAME's users' lock exclusively (or -1, busy: e says who), under
 * the gate or, without it, only to look (list, remove, gc). */
static int lock_alone(const char *locks, const char *name, const char *why, bool wait,
		      struct err *e)
{
	int fd = open_lock(locks, name, "lock", e);

	if (fd < 0)
		return -1;
	if ((wait ? cache_try_lock(fd, LOCK_EX) : flock(fd, LOCK_EX | LOCK_NB)) == 0)
		return fd;
	busy(fd, name, why, e);
	close(fd);
	return -1;
}

/* NAME's gate: waited for (a run holds it only to join, mount or leave),
 * or taken without waiting (list, remove, gc: busy then means in use). */
static int gate(const char *locks, const char *name, bool wait, struct err *e)
{
	int fd = open_lock(locks, name, "gate", e);

	if (fd < 0)
		return -1;
	if (wait ? cache_lock(fd, LOCK_EX) == 0 : flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (wait || errno != EWOULDBLOCK)
		err_sys(e, EXIT_CTRUN, "--name %s: its gate", name);
	else
		err_set(e, EXIT_CTRUN, "--name %s: in use on this node (a run is starting or "
			"leaving it)", name);
	close(fd);
	return -1;
}

static int paths(const struct named_req *q, struct named *n, struct err *e)
{
	char cdir[PATH_MAX];

	if (named_check_name(q->name, e) < 0 || containers_dir(q->cfg, cdir, sizeof(cdir), e) < 0)
		return -1;
	if (xsnprintf(n->name, sizeof(n->name), "%s", q->name) < 0 ||
	    xsnprintf(n->dir, sizeof(n->dir), "%s/%s", cdir, q->name) < 0 ||
	    xsnprintf(n->upper, sizeof(n->upper), "%s/upper", n->dir) < 0 ||
	    xsnprintf(n->work, sizeof(n->work), "%s/work", n->dir) < 0 ||
	    xsnprintf(n->merged, sizeof(n->merged), "%s/merged", n->dir) < 0 ||
	    xsnprintf(n->locks, sizeof(n->locks), "%s/locks", q->cfg->dir) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", q->cfg->dir);
	return 0;
}

/* The record's image is this run's, else why not (EXIT_USAGE). */
static int same_image(const struct named_req *q, const struct named *n, struct err *e)
{
	char id[CACHE_ID_MAX], image[4096];

	if (read_record(n->dir, id, sizeof(id), image, sizeof(image), e) < 0)
		return -1;
	if (strcmp(id, q->identity) != 0 && strcmp(image, q->image) == 0)
		return err_set(e, EXIT_USAGE, "--name %s was made from %s, which changed since "
			       "(replaced or modified): add --name-reset to start %s anew from it "
			       "(its changes are lost), or choose another name", q->name, image,
			       q->name);
	if (strcmp(id, q->identity) != 0)
		return err_set(e, EXIT_USAGE, "--name %s was made from %s, and %s is another image "
			       "(or that file changed since): add --name-reset to start %s anew "
			       "from it (its changes are lost), or choose another name", q->name,
			       image, q->image, q->name);
	return 0;
}

/* The shared overlay's mount source: upper's device and inode. */
static int make_tag(struct named *n, struct err *e)
{
	struct stat st;

	/* An older container has no merged directory yet. */
	if ((mkdir(n->merged, 0700) < 0 && errno != EEXIST) || lstat(n->upper, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "named container %s", n->dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, EXIT_CTRUN, "%s is not a directory", n->upper);
	return xsnprintf(n->tag, sizeof(n->tag), "ctrun-named:%u.%u:%llu", major(st.st_dev),
			 minor(st.st_dev), (unsigned long long)st.st_ino) < 0
		       ? err_set(e, EXIT_CTRUN, "named container %s", n->dir)
		       : 0;
}

int named_open(const struct named_req *q, struct named *n, struct err *e)
{
	static const char alone[] = "--name-reset, --save and ctrun save need a named container "
				    "no run uses: wait for those runs to end";
	struct stat st;

	memset(n, 0, sizeof(*n));
	n->lock_fd = n->gate_fd = -1;
	if (paths(q, n, e) < 0 || (n->gate_fd = gate(n->locks, q->name, true, e)) < 0)
		return -1;
	n->exclusive = q->exclusive || q->reset;
	if (n->exclusive && (n->lock_fd = lock_alone(n->locks, q->name, alone, true, e)) < 0)
		goto fail;
	if (n->lock_fd < 0 && (n->lock_fd = open_lock(n->locks, q->name, "lock", e)) < 0)
		goto fail;
	if (lstat(n->dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			err_set(e, EXIT_CTRUN, "%s is not a directory", n->dir);
			goto fail;
		}
		if (!q->reset) {
			if (same_image(q, n, e) < 0 || make_tag(n, e) < 0)
				goto fail;
			/* Its last use, for `ctrun cache list`. */
			(void)utimensat(AT_FDCWD, n->dir, NULL, AT_SYMLINK_NOFOLLOW);
			return 0;
		}
		if (remove_dir(n->dir, e) < 0)
			goto fail;
	} else if (errno != ENOENT) {
		err_sys(e, EXIT_CTRUN, "%s", n->dir);
		goto fail;
	}
	if (make(q, n->dir, e) < 0 || make_tag(n, e) < 0)
		goto fail;
	n->created = true;
	return 0;
fail:
	named_close(n);
	return -1;
}

int named_claim(struct named *n, struct err *e)
{
	if (cache_try_lock(n->lock_fd, LOCK_EX) == 0)
		return 0;
	return busy(n->lock_fd, n->name, "it runs without sharing its root: under another "
		    "runtime, or its door is gone", e);
}

int named_share(struct named *n, struct err *e)
{
	/* After a claim: Linux drops the exclusive lock before it takes the
	 * shared one, and only a taker of the gate (which we hold) could come
	 * in between. */
	if (flock(n->lock_fd, LOCK_SH | LOCK_NB) == 0)
		return 0;
	return busy(n->lock_fd, n->name, "that run has it to itself: --name-reset, --save or "
		    "ctrun save", e);
}

void named_gate_release(struct named *n)
{
	if (n->gate_fd >= 0) {
		/* An unlock, not only a close: a child may hold a copy. */
		flock(n->gate_fd, LOCK_UN);
		close(n->gate_fd);
	}
	n->gate_fd = -1;
}

int named_gate_take(struct named *n)
{
	struct err ignored = { 0 };

	if (n->gate_fd < 0)
		n->gate_fd = gate(n->locks, n->name, true, &ignored);
	return n->gate_fd < 0 ? -1 : 0;
}

void named_close(struct named *n)
{
	named_gate_release(n);
	if (n->lock_fd >= 0) {
		flock(n->lock_fd, LOCK_UN);
		close(n->lock_fd);
	}
	n->lock_fd = -1;
}

int named_door_name(const char *name, long pid, char *buf, size_t size)
{
	return xsnprintf(buf, size, "container-%s.%ld.sock", name, pid) < 0 ? -1 : 0;
}

long named_door_pid(const char *file, const char *name)
{
	size_t nl = strlen(name);
	const char *p;
	char *end;
	long pid;

	if (strncmp(file, "container-", 10) != 0 || strncmp(file + 10, name, nl) != 0 ||
	    file[10 + nl] != '.')
		return -1;
	p = file + 10 + nl + 1;
	if (*p < '1' || *p > '9')
		return -1;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno != 0 || pid <= 0 || pid > INT_MAX || strcmp(end, ".sock") != 0)
		return -1;
	return pid;
}

/* Removes NAME's doors in locks: those dead runs left (a kill -9); only
 * under the gate and the users' lock held exclusively, when no run uses
 * NAME and none can start. */
static void sweep_doors(const char *locks, const char *name)
{
	DIR *d = opendir(locks);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (named_door_pid(de->d_name, name) > 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

/* NAME to itself, for list, remove and gc, without waiting: the gate, then
 * the users' lock exclusively.  0 with both in *g and *l; -1 (in use:
 * e says by whom). */
static int take_alone(const char *locks, const char *name, int *g, int *l, struct err *e)
{
	*l = -1;
	*g = gate(locks, name, false, e);
	if (*g < 0)
		return -1;
	*l = lock_alone(locks, name, "a run uses it", false, e);
	if (*l >= 0)
		return 0;
	close(*g);
	*g = -1;
	return -1;
}

static void release_alone(int g, int l)
{
	if (l >= 0)
		close(l);
	if (g >= 0)
		close(g);
}

int named_list(const struct cache_cfg *c, struct named_entry **out, size_t *n, struct err *e)
{
	char cdir[PATH_MAX], dir[PATH_MAX], id[CACHE_ID_MAX], locks[PATH_MAX];
	struct named_entry *v = NULL;
	struct dirent *de;
	size_t cnt = 0;
	DIR *d;

	*out = NULL;
	*n = 0;
	if (containers_dir(c, cdir, sizeof(cdir), e) < 0)
		return -1;
	d = opendir(cdir);
	if (d == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", cdir);
	while ((de = readdir(d)) != NULL) {
		struct named_entry *ne, *nv;
		struct err ignored = { 0 };
		struct stat st;
		int fd, g, l;

		if (named_check_name(de->d_name, &ignored) < 0 || strstr(de->d_name, CACHE_TMP_TAG))
			continue;
		if (xsnprintf(dir, sizeof(dir), "%s/%s", cdir, de->d_name) < 0 ||
		    lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (nv == NULL) {
			closedir(d);
			free(v);
			return err_sys(e, EXIT_CTRUN, "named containers");
		}
		v = nv;
		ne = &v[cnt++];
		memset(ne, 0, sizeof(*ne));
		snprintf(ne->name, sizeof(ne->name), "%s", de->d_name);
		if (read_record(dir, id, sizeof(id), ne->image, sizeof(ne->image), &ignored) < 0)
			snprintf(ne->image, sizeof(ne->image), "?");
		ne->last_use = (long long)st.st_mtim.tv_sec;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			ne->bytes = cache_du(fd);
			close(fd);
		}
		if (xsnprintf(locks, sizeof(locks), "%s/locks", c->dir) < 0 ||
		    take_alone(locks, ne->name, &g, &l, &ignored) < 0) {
			ne->in_use = true;
		} else {
			release_alone(g, l);
		}
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}

int named_remove(const struct cache_cfg *c, const char *name, bool *found, struct err *e)
{
	char cdir[PATH_MAX], dir[PATH_MAX], locks[PATH_MAX];
	int g, l, rv;

	*found = false;
	if (named_check_name(name, e) < 0 || containers_dir(c, cdir, sizeof(cdir), e) < 0)
		return -1;
	if (xsnprintf(dir, sizeof(dir), "%s/%s", cdir, name) < 0 ||
	    xsnprintf(locks, sizeof(locks), "%s/locks", c->dir) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	if (access(dir, F_OK) < 0)
		return 0;
	if (take_alone(locks, name, &g, &l, e) < 0) {
		/* Say it as the command said it, not as a run would. */
		char why[sizeof(e->msg)];
		const char *p = strstr(e->msg, ": in use ");

		snprintf(why, sizeof(why), "%s", p != NULL ? p : ": in use");
		return err_set(e, EXIT_CTRUN, "cache remove %s%s: remove it once no run uses it",
			       name, why);
	}
	*found = true;
	rv = remove_dir(dir, e);
	sweep_doors(locks, name);
	release_alone(g, l);
	return rv;
}

int named_gc(const struct cache_cfg *c, size_t *removed, unsigned long long *freed,
	     struct err *e)
{
	struct named_entry *v;
	char cdir[PATH_MAX], dir[PATH_MAX], rec[CACHE_ID_MAX], now[CACHE_ID_MAX];
	char image[4096], locks[PATH_MAX];
	size_t n;

	*removed = 0;
	*freed = 0;
	if (named_list(c, &v, &n, e) < 0)
		return -1;
	if (xsnprintf(cdir, sizeof(cdir), "%s/containers", c->dir) < 0 ||
	    xsnprintf(locks, sizeof(locks), "%s/locks", c->dir) < 0) {
		free(v);
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	}
	for (size_t i = 0; i < n; i++) {
		struct err ignored = { 0 };
		int g, l;

		if (v[i].in_use || xsnprintf(dir, sizeof(dir), "%s/%s", cdir, v[i].name) < 0 ||
		    read_record(dir, rec, sizeof(rec), image, sizeof(image), &ignored) < 0)
			continue;
		if (cache_identity(image, now, sizeof(now), &ignored) == 0 && strcmp(now, rec) == 0)
			continue;
		if (take_alone(locks, v[i].name, &g, &l, &ignored) < 0)
			continue;
		if (remove_dir(dir, &ignored) == 0) {
			(*removed)++;
			*freed += v[i].bytes;
		}
		sweep_doors(locks, v[i].name);
		release_alone(g, l);
	}
	free(v);
	return 0;
}

int named_image(const struct cache_cfg *c, const char *name, char *image, size_t size,
		struct err *e)
{
	char cdir[PATH_MAX], dir[PATH_MAX], id[CACHE_ID_MAX];
	struct stat st;

	if (named_check_name(name, e) < 0 || containers_dir(c, cdir, sizeof(cdir), e) < 0)
		return -1;
	if (xsnprintf(dir, sizeof(dir), "%s/%s", cdir, name) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(e, EXIT_USAGE, "no named container %s in %s on this node (ctrun "
			       "cache list shows them)", name, cdir);
	return read_record(dir, id, sizeof(id), image, size, e);
}
