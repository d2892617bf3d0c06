/* cache.c - the node cache: image identity, create-once under a lock, publish by rename.
 *
 * Layout under the cache root (see cache.h and docs/images.md):
 *   entries/<id>/rootfs     the unpacked image     entries/<id>/meta.json   what it is
 *   entries/<id>/bytes      disk use (by list/gc)
 *   entries/<id>/last-use   mtime = last use (gc)  entries/<id>.ctrun-tmp.<host>.<pid>  in creation
 *   locks/<id>.lock         flock: held (exclusive) by the one creator
 *   locks/<id>.use          flock: shared by every user, exclusive by gc/remove
 *   trash/                  entries being deleted   log   one line per creation
 * An entry exists iff entries/<id> exists, and it appears by one rename(2) of a
 * finished temp, so no crash leaves a half entry that looks valid.  Lock files
 * are never deleted: unlinking a lock file that another process has open but
 * not yet locked would let two processes hold "the" lock at once. */
#include "cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cache_int.h"
#include "privdir.h"
#include "rootpath.h"
#include "util.h"

int cache_default_dir(char *buf, size_t size, struct err *e)
{
	const char *env = getenv("CTRUN_CACHE_DIR");
	char name[64];

	if (env != NULL && *env != '\0') {
		if (xsnprintf(buf, size, "%s", env) < 0)
			return err_set(e, EXIT_USAGE, "CTRUN_CACHE_DIR too long");
		return 0;
	}
	/* Not $XDG_RUNTIME_DIR: a small tmpfs in memory, emptied at logout. */
	if (xsnprintf(name, sizeof(name), "ctrun-cache-%u", (unsigned)geteuid()) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir name too long");
	return privdir_default("/tmp", name, buf, size, e) < 0 ? err_wrap(e, "cache dir") : 0;
}

void cache_hostname(char *host, size_t size)
{
	if (gethostname(host, size - 1) < 0)
		snprintf(host, size, "localhost");
	host[size - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
}

/* Two differently seeded 64-bit FNV-1a passes, each with a final mix: an id,
 * not a defence (the cache root is the user's own; see cache_root_check). */
static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return mix(h);
}

/* Bumped whenever the unpacker changes what an entry holds (2: the docker/OCI
 * config Env written to /etc/environment; 3: a shared entry's inodes all
 * root's), so older entries are not reused. */
#define CACHE_FORMAT 3

int cache_identity(const char *image, char *id, size_t size, struct err *e)
{
	char real[PATH_MAX], buf[PATH_MAX + 160];
	struct stat st;
	int n;

	if (realpath(image, real) == NULL || stat(real, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "image %s", image);
	/* ctime changes on every write and rename onto the path, even one that
	 * restores mtime (cp -p, touch -r), and the inode changes on replacement. */
	n = snprintf(buf, sizeof(buf), "%d:%s%c%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", CACHE_FORMAT,
		     real, 0, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		     (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return err_set(e, EXIT_CTRUN, "image %s: path too long", image);
	if (snprintf(id, size, "%016llx%016llx",
		     (unsigned long long)fnv(buf, (size_t)n, 1469598103934665603ULL),
		     (unsigned long long)fnv(buf, (size_t)n, 0x9e3779b97f4a7c15ULL)) != 32)
		return err_set(e, EXIT_CTRUN, "cache id buffer too small");
	return 0;
}

static int sync_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rv;

	if (fd < 0)
		return -1;
	rv = syncfs(fd);
	close(fd);
	return rv;
}

static int sync_parent(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rv;

	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return 0;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	fd = open(dir[0] != '\0' ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rv = fsync(fd);
	close(fd);
	return rv;
}

int cache_root_check(const struct cache_cfg *c, struct err *e)
{
	static const char *const subs[] = { "entries", "locks", "trash" };
	char path[PATH_MAX];

	if (c->shared && geteuid() != 0)
		return err_set(e, EXIT_USAGE, "shared cache %s: only root fills the node's shared "
			       "cache (run ctrun cache create --shared as root, e.g. from the prolog)",
			       c->dir);
	/* Someone else's directory at our default path (/tmp/ctrun-cache-$UID
	 * made by another user) could hand us a prepared rootfs: refused.  A
	 * shared cache's parents are the site's: they must exist. */
	if (privdir_make(c->dir, c->shared ? 0 : PRIVDIR_PARENTS, e) < 0)
		return err_wrap(e, c->shared ? "shared cache dir" : "cache dir");
	if (c->shared && chmod(c->dir, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "shared cache %s", c->dir);
	for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++) {
		mode_t mode = c->shared && i < 2 ? 0755 : 0700;

		if (xsnprintf(path, sizeof(path), "%s/%s", c->dir, subs[i]) < 0)
			return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
		if (mkdir(path, mode) < 0 && errno != EEXIST)
			return err_sys(e, EXIT_CTRUN, "cache dir %s", path);
		if (c->shared && chmod(path, mode) < 0)
			return err_sys(e, EXIT_CTRUN, "cache dir %s", path);
	}
	return 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The pid the creator wrote into its lock file, 0 if none (yet). */
static long holder_pid(int fd)
{
	char buf[32];
	ssize_t n;
	long pid;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return parse_long(buf, 1, LONG_MAX, &pid) == 0 ? pid : 0;
}

/* Takes the create lock; a caller that has to wait says so once, naming the
 * creator.  Right after taking the lock the creator has not written its pid
 * yet, and a quick creator may already be done: poll briefly before waiting. */
static int lock_or_wait(int fd, const char *host, const char *name, bool quiet)
{
	long pid = 0;

	for (int i = 0; i < 20; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		pid = holder_pid(fd);
		if (pid > 0)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	if (!quiet) {
		if (pid > 0)
			fprintf(stderr, "ctrun: waiting for %s cache entry %s being created by pid %ld\n",
				host, name, pid);
		else
			fprintf(stderr, "ctrun: waiting for %s cache entry %s being created by another "
				"process\n", host, name);
	}
	return cache_lock(fd, LOCK_EX);
}

int cache_lock(int fd, int how)
{
	while (flock(fd, how) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Use locks this process holds (shared) on the entries it handed out: gc and
 * remove skip an entry while its rootfs may be in use.  Released at exit. */
static int held[64];
static size_t nheld;

void cache_hold(int fd)
{
	if (nheld < sizeof(held) / sizeof(*held))
		held[nheld++] = fd;
	else
		close(fd); /* more than 64 images in one process: not held, still valid */
}

/* How long a shared use lock is tried: root's gc or remove holds it
 * exclusively only while it renames an entry away (microseconds). */
#define USE_LOCK_TRIES 100
#define USE_LOCK_STEP_NS (20 * 1000 * 1000)

void cache_lock_holder(int fd, char *out, size_t size)
{
	char line[256], path[64];
	struct stat st, ps;
	FILE *f;

	snprintf(out, size, "another process");
	if (fstat(fd, &st) < 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return;
	/* "1: FLOCK  ADVISORY  WRITE 4242 08:01:131 0 EOF" (major:minor hex). */
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned maj, min;
		unsigned long long ino;
		long pid;

		if (strstr(line, "->") != NULL || /* a waiter, not a holder */
		    sscanf(line, "%*s %*s %*s %*s %ld %x:%x:%llu", &pid, &maj, &min, &ino) != 4 ||
		    ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) ||
		    min != minor(st.st_dev))
			continue;
		if (pid <= 0) /* not in our PID namespace (a container, another node's) */
			snprintf(out, size, "a process in another PID namespace");
		else if (snprintf(path, sizeof(path), "/proc/%ld", pid) > 0 && stat(path, &ps) == 0)
			snprintf(out, size, "pid %ld (uid %u)", pid, (unsigned)ps.st_uid);
		else
			snprintf(out, size, "pid %ld", pid);
		break;
	}
	fclose(f);
}

int cache_try_lock(int fd, int how)
{
	for (int i = 0; i < USE_LOCK_TRIES; i++) {
		if (flock(fd, how | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		nanosleep(&(struct timespec){ 0, USE_LOCK_STEP_NS }, NULL);
	}
	errno = EWOULDBLOCK;
	return -1;
}

/* Removes temps of `final` left by dead creators on this host: the caller
 * holds the create lock, so no live creator of this host is writing one.
 * Moved to one side first: a tool the dead creator started may still be
 * writing for an instant (it gets SIGKILL from PDEATHSIG). */
static void clean_temps(const char *final, const char *host)
{
	char dir[PATH_MAX], prefix[NAME_MAX + 1], path[PATH_MAX], gone[PATH_MAX];
	const char *slash = strrchr(final, '/');
	struct dirent *de;
	size_t plen;
	DIR *d;

	if (slash == NULL || (size_t)(slash - final) >= sizeof(dir))
		return;
	memcpy(dir, final, (size_t)(slash - final));
	dir[slash - final] = '\0';
	if (xsnprintf(prefix, sizeof(prefix), "%s" CACHE_TMP_TAG "%s.", slash + 1, host) < 0)
		return;
	plen = strlen(prefix);
	d = opendir(dir[0] ? dir : "/");
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		if (xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0 ||
		    xsnprintf(gone, sizeof(gone), "%s/%s.gone", dir, de->d_name) < 0)
			continue;
		if (strstr(de->d_name, ".gone") == NULL && rename(path, gone) == 0)
			remove_tree(gone);
		else
			remove_tree(path);
	}
	closedir(d);
}

int cache_create_once_e(const char *lock_path, const char *final_path,
			int (*create)(const char *tmp_path, void *arg, struct err *e), void *arg,
			bool quiet, struct err *e)
{
	char host[256], tmp[PATH_MAX], pid[32];
	const char *name = strrchr(final_path, '/');
	bool wrote = false;
	int fd, rv = -1, n;

	name = name != NULL ? name + 1 : final_path;
	if (exists(final_path))
		return 0;
	cache_hostname(host, sizeof(host));
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "cache lock %s", lock_path);
	if (lock_or_wait(fd, host, name, quiet) < 0) {
		err_sys(e, EXIT_CTRUN, "cache lock %s", lock_path);
		goto out;
	}
	/* The creator we waited for may have published it. */
	if (exists(final_path)) {
		rv = 0;
		goto out;
	}
	clean_temps(final_path, host);
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		err_sys(e, EXIT_CTRUN, "cache lock %s", lock_path);
		goto out;
	}
	wrote = true;
	if (xsnprintf(tmp, sizeof(tmp), "%s" CACHE_TMP_TAG "%s.%ld", final_path, host,
		      (long)getpid()) < 0) {
		err_set(e, EXIT_CTRUN, "cache path too long: %s", final_path);
		goto out;
	}
	if (create(tmp, arg, e) < 0) {
		remove_tree(tmp);
		goto out;
	}
	/* Durable before visible: a node that crashes after the rename must
	 * not find an entry of empty files under an unchanged identity (it
	 * would be reused for ever).  syncfs writes the whole tree in one call. */
	if (sync_tree(tmp) < 0) {
		err_sys(e, EXIT_CTRUN, "writing cache entry %s to disk", tmp);
		remove_tree(tmp);
		goto out;
	}
	if (rename(tmp, final_path) < 0) {
		/* On a shared file system another host may have won the race: use its entry. */
		if ((errno == ENOTEMPTY || errno == EEXIST) && exists(final_path)) {
			remove_tree(tmp);
		} else {
			err_sys(e, EXIT_CTRUN, "publishing cache entry %s", final_path);
			remove_tree(tmp);
			goto out;
		}
	}
	/* ... and the rename itself durable. */
	if (sync_parent(final_path) < 0) {
		err_sys(e, EXIT_CTRUN, "writing cache entry %s to disk", final_path);
		goto out;
	}
	rv = 0;
out:
	/* The pid is only for the waiting message; a stale one misleads. */
	if (wrote && ftruncate(fd, 0) < 0)
		rv = err_sys(e, EXIT_CTRUN, "cache lock %s", lock_path);
	close(fd);
	return rv;
}

/* Adapter from the errno-style callback of cache_create_once. */
struct plain {
	int (*create)(const char *, void *);
	void *arg;
};

static int plain_create(const char *tmp, void *arg, struct err *e)
{
	struct plain *p = arg;

	if (p->create(tmp, p->arg) < 0)
		return err_sys(e, EXIT_CTRUN, "creating %s", tmp);
	return 0;
}

int cache_create_once(const char *lock_path, const char *final_path,
		      int (*create)(const char *tmp_path, void *arg), void *arg, struct err *e)
{
	struct plain p = { create, arg };

	return cache_create_once_e(lock_path, final_path, plain_create, &p, false, e);
}
