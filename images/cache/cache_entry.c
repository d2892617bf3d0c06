/* cache_entry.c - cache_get_rootfs: one unpacked rootfs per image identity per node. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_int.h"
#include "image.h"
#include "unpack/unpack.h"
#include "util.h"

int cache_path(char *buf, size_t size, const struct cache_cfg *c, const char *sub,
	       const char *id, const char *suffix, struct err *e)
{
	if (xsnprintf(buf, size, "%s/%s/%s%s", c->dir, sub, id, suffix) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	return 0;
}

int cache_open_use_lock(const struct cache_cfg *c, const char *id, struct err *e)
{
	char path[PATH_MAX];
	int fd;

	if (cache_path(path, sizeof(path), c, "locks", id, ".use", e) < 0)
		return -1;
	/* Every user of a shared cache opens it read-only for its shared lock. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, c->shared ? 0644 : 0600);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "cache lock %s", path);
	if (c->shared && fchmod(fd, 0644) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "cache lock %s", path);
	}
	return fd;
}

unsigned long long cache_du(int dirfd)
{
	unsigned long long total = 0;
	struct stat st;
	int dup_fd = dup(dirfd);
	struct dirent *de;
	DIR *d;

	if (dup_fd < 0)
		return 0;
	d = fdopendir(dup_fd);
	if (d == NULL) {
		close(dup_fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		total += (unsigned long long)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				total += cache_du(sub);
				close(sub);
			}
		}
	}
	closedir(d);
	return total;
}

struct entry_ctx {
	const struct cache_cfg *c;
	const char *image;   /* as given */
	char real[PATH_MAX]; /* realpath */
	const char *id;
	enum image_kind kind;
};

static int write_meta(const char *path, const struct entry_ctx *x, double secs,
		      struct err *e)
{
	json_object *m = json_object_new_object();
	char host[256];
	const char *text;
	int fd, rv = -1;
	struct stat st;

	cache_hostname(host, sizeof(host));
	if (m == NULL || stat(x->real, &st) < 0) {
		err_sys(e, EXIT_CTRUN, "cache meta %s", path);
		goto out;
	}
	json_object_object_add(m, "image", json_object_new_string(x->real));
	json_object_object_add(m, "kind", json_object_new_string(image_kind_name(x->kind)));
	json_object_object_add(m, "created", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(m, "seconds", json_object_new_double(secs));
	json_object_object_add(m, "host", json_object_new_string(host));
	json_object_object_add(m, "image_size", json_object_new_int64((int64_t)st.st_size));
	json_object_object_add(m, "image_mtime", json_object_new_int64((int64_t)st.st_mtim.tv_sec));
	/* What cache_shared.c trusts: every inode of this tree was given to root. */
	if (x->c->shared)
		json_object_object_add(m, "owners", json_object_new_string("root"));
	text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PRETTY);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0) {
		err_sys(e, EXIT_CTRUN, "cache meta %s", path);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	rv = 0;
out:
	json_object_put(m);
	return rv;
}

/* One line per creation in <dir>/log: for admins, and the race tests count them. */
static void log_creation(const struct entry_ctx *x, double secs)
{
	char path[PATH_MAX], line[PATH_MAX + 256], host[256];
	int fd, n;

	cache_hostname(host, sizeof(host));
	if (xsnprintf(path, sizeof(path), "%s/log", x->c->dir) < 0)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%lld created %s host=%s pid=%ld kind=%s seconds=%.2f image=%s\n",
		     (long long)time(NULL), x->id, host, (long)getpid(), image_kind_name(x->kind),
		     secs, x->real);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(fd, line, (size_t)n); /* O_APPEND: one write, one line */
	close(fd);
}

/* An unpacker that ran out of room says so in its own words, if at all
 * (unsquashfs: "failed to write file X"): while the half entry still
 * fills the file system, name the cause and the fix in front of them. */
static void explain_if_full(const char *tmp, const struct cache_cfg *c, struct err *e)
{
	struct statvfs v;
	char why[256];
	unsigned long long avail;

	if (statvfs(tmp, &v) < 0)
		return;
	avail = (unsigned long long)v.f_bavail * v.f_frsize;
	if (avail >= 16ULL << 20 && !(v.f_files > 0 && v.f_favail == 0))
		return;
	snprintf(why, sizeof(why), "%s", e->msg);
	err_set(e, EXIT_CTRUN,
		"the cache file system is full (%llu KiB%s free under %s): free space there "
		"(ctrun cache gc) or point [cache] dir / CTRUN_CACHE_DIR elsewhere; %s",
		avail >> 10, v.f_files > 0 && v.f_favail == 0 ? ", no inode" : "", c->dir, why);
}

/* create() of cache_create_once_e: tmp/rootfs, tmp/meta.json, tmp/last-use. */
static int create_entry(const char *tmp, void *arg, struct err *e)
{
	struct entry_ctx *x = arg;
	char rootfs[PATH_MAX], meta[PATH_MAX], last[PATH_MAX];
	double t0 = (double)mono_ns() / 1e9;
	int fd;

	if (xsnprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp) < 0 ||
	    xsnprintf(meta, sizeof(meta), "%s/meta.json", tmp) < 0 ||
	    xsnprintf(last, sizeof(last), "%s/last-use", tmp) < 0)
		return err_set(e, EXIT_CTRUN, "cache path too long: %s", tmp);
	if (mkdir(tmp, 0700) < 0 || mkdir(rootfs, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "cache entry %s", tmp);
	if (x->c->progress)
		fprintf(stderr, "ctrun: unpacking %s (%s) into the node cache\n", x->image,
			image_kind_name(x->kind));
	if (image_unpack_progress(x->real, x->kind, rootfs, x->c->progress, x->c->max_unpacked,
				  e) < 0) {
		explain_if_full(tmp, x->c, e);
		return -1;
	}
	/* Every user runs a shared entry: an image's files owned by uid 1000
	 * would be host user 1000's to rewrite.  Root's, all of them. */
	if (x->c->shared && image_sanitize_shared(rootfs, e) < 0)
		return err_wrap(e, "image %s", x->image);
	/* The entry's disk use is measured by the first list or gc, not here: a
	 * walk of the tree would add ~3% to every job start on a cold node. */
	if (write_meta(meta, x, (double)mono_ns() / 1e9 - t0, e) < 0)
		return -1;
	fd = open(last, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "cache entry %s", last);
	close(fd);
	/* Runtimes may run the rootfs as another user (rootless maps): the entry's
	 * own directory was 0700 only while it was being built. */
	if (chmod(tmp, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "cache entry %s", tmp);
	log_creation(x, (double)mono_ns() / 1e9 - t0);
	return 0;
}

bool cache_has_entry(const struct cache_cfg *c, const char *image)
{
	char id[CACHE_ID_MAX], path[PATH_MAX];
	struct err e = { 0 };
	struct stat st;

	if (cache_identity(image, id, sizeof(id), &e) < 0)
		return false;
	for (int i = 0; i < 2; i++) {
		const char *dir = i == 0 ? c->lookup : c->dir;

		if (dir != NULL && xsnprintf(path, sizeof(path), "%s/entries/%s/rootfs", dir, id) >= 0 &&
		    lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return true;
	}
	return false;
}

int cache_get_rootfs(const struct cache_cfg *c, const char *image, char *rootfs, size_t size,
		     struct err *e)
{
	struct entry_ctx x = { .c = c, .image = image };
	char id[CACHE_ID_MAX], entry[PATH_MAX], lock[PATH_MAX], last[PATH_MAX];
	struct stat st;
	int use = -1;

	if (realpath(image, x.real) == NULL)
		return err_sys(e, EXIT_CTRUN, "image %s", image);
	/* A rootfs directory is used in place: copying it would only cost time. */
	if (stat(x.real, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (xsnprintf(rootfs, size, "%s", x.real) < 0)
			return err_set(e, EXIT_CTRUN, "image %s: path too long", image);
		return 0;
	}
	if (cache_identity(x.real, id, sizeof(id), e) < 0)
		return -1;
	if (c->lookup != NULL && !c->shared) {
		int r = cache_shared_entry(c->lookup, id, c->quiet, rootfs, size, e);

		if (r != 0)
			return r < 0 ? -1 : 0;
	}
	if (cache_root_check(c, e) < 0)
		return -1;
	x.id = id;
	if (cache_path(entry, sizeof(entry), c, "entries", id, "", e) < 0 ||
	    cache_path(lock, sizeof(lock), c, "locks", id, ".lock", e) < 0 ||
	    xsnprintf(last, sizeof(last), "%s/last-use", entry) < 0 ||
	    xsnprintf(rootfs, size, "%s/rootfs", entry) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	use = cache_open_use_lock(c, id, e);
	if (use < 0)
		return -1;
	/* Shared: many users at once; gc/remove need it exclusively.  The
	 * shared cache's use lock is every user's to open, and so to hold:
	 * root only tries it (cache_shared.c).  It guards nothing here that
	 * outlives this command, and no gc (root's only) can take the entry
	 * while another process holds the lock, so a busy lock is named and
	 * passed over rather than waited for by a prolog. */
	if ((c->shared ? cache_try_lock(use, LOCK_SH) : cache_lock(use, LOCK_SH)) < 0) {
		char who[96];

		if (!c->shared || errno != EWOULDBLOCK) {
			err_sys(e, EXIT_CTRUN, "cache entry %s", id);
			goto fail;
		}
		cache_lock_holder(use, who, sizeof(who));
		fprintf(stderr, "ctrun: warning: the use lock of shared cache entry %s is held by "
			"%s; going on without it\n", id, who);
	}
	if (lstat(entry, &st) < 0) {
		if (image_detect(x.real, &x.kind, e) < 0)
			goto fail;
		if (cache_create_once_e(lock, entry, create_entry, &x, c->quiet, e) < 0) {
			err_wrap(e, "cache entry for %s", image);
			goto fail;
		}
	} else if (c->shared && cache_shared_verify(entry, rootfs, e) < 0) {
		/* An entry that is there is only "created" if users may trust it. */
		goto fail;
	}
	/* Last use for gc; a read-only site cache simply keeps its times. */
	utimensat(AT_FDCWD, last, NULL, 0);
	cache_hold(use);
	return 0;
fail:
	close(use);
	return -1;
}
