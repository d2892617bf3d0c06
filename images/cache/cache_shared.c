/* cache_shared.c - the node's shared cache, as every user meets it.
 *
 * Root fills it (ctrun cache create --shared); every user, root included,
 * runs what is in it.  So nothing in it may be changeable by anyone but
 * root, and nothing in it that another user can open may stall a run:
 *  - an entry is used only when every step from the cache root to it is a
 *    directory of root's that no one else can write, its meta.json is
 *    root's and says every inode of the tree was given to root when it was
 *    made (image_sanitize_shared), so no host user who happens to own an
 *    image's /home/ubuntu can rewrite a file in it;
 *  - its use lock (locks/<id>.use, 0644) is readable by all, and flock
 *    works on a read-only descriptor, so any user can hold it exclusively.
 *    It is therefore only ever tried without blocking, for a bounded time:
 *    when it stays taken the run says by whom and uses the user's own
 *    cache instead, never waits for ever;
 *  - the lock is taken before the entry is checked, so a gc that removes
 *    the entry in between is seen (lock first, then look). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_int.h"
#include "privdir.h"
#include "unpack/unpack.h"
#include "util.h"

/* Each step from the shared cache's root to the entry's rootfs must be a
 * directory of root's that no one else can write: then nobody but root can
 * have put anything there.  The root itself may be a link of root's.
 * 1 fine, 0 missing, -1 with e. */
static int step_ok(const char *path, bool top, struct err *e)
{
	static const struct trust root_only = { 0, true, TRUST_NO_GROUP };
	struct stat st;
	char why[96];

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "shared cache %s", path);
	if (top && S_ISLNK(st.st_mode) && st.st_uid == 0 && stat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "shared cache %s", path);
	if (trust_check(&st, true, &root_only, why, sizeof(why)) < 0)
		return err_set(e, EXIT_CTRUN, "shared cache %s: %s; a shared cache must be root's "
			       "directories that no one else can write (ctrun cache create --shared, "
			       "as root, makes it so)", path, why);
	return 1;
}

static int steps_ok(const char *dir, const char *const *steps, size_t n, struct err *e)
{
	char path[PATH_MAX];
	int r = 1;

	for (size_t i = 0; r == 1 && i < n; i++) {
		if (xsnprintf(path, sizeof(path), "%s%s", dir, steps[i]) < 0)
			return err_set(e, EXIT_CTRUN, "shared cache %s: path too long", dir);
		r = step_ok(path, i == 0, e);
	}
	return r;
}

/* entries/<id>/meta.json: root's, written by no one else, and saying that
 * the tree was given to root when it was made.  1 yes, 0 no (why in e). */
static int meta_ok(const char *entry, struct err *e)
{
	char path[PATH_MAX];
	json_object *m = NULL, *v;
	struct stat st;
	int fd, rv = 0;

	if (xsnprintf(path, sizeof(path), "%s/meta.json", entry) < 0)
		return err_set(e, EXIT_CTRUN, "shared cache %s: path too long", entry);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) != 0 || st.st_size > 65536) {
		err_set(e, EXIT_CTRUN, "shared cache entry %s: no meta.json of root's", entry);
		goto out;
	}
	m = json_object_from_fd(fd);
	if (m == NULL || !json_object_object_get_ex(m, "owners", &v) ||
	    strcmp(json_object_get_string(v), "root") != 0) {
		err_set(e, EXIT_CTRUN, "shared cache entry %s was not made by this ctrun (its files "
			"may keep the image's owners)", entry);
		goto out;
	}
	rv = 1;
out:
	if (fd >= 0)
		close(fd);
	json_object_put(m);
	return rv;
}

/* Opens locks/<id>.use read-only, refusing anything but a regular file of
 * root's (O_NONBLOCK: a FIFO planted there could not stall the open). */
static int open_use(const char *dir, const char *id, char *path, size_t size, struct err *e)
{
	struct stat st;
	int fd;

	if (xsnprintf(path, size, "%s/locks/%s.use", dir, id) < 0)
		return err_set(e, EXIT_CTRUN, "shared cache %s: path too long", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -2 : err_sys(e, EXIT_CTRUN, "shared cache lock %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) != 0) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "shared cache lock %s: not a regular file of root's "
			       "that no one else can write", path);
	}
	return fd;
}

int cache_shared_entry(const char *dir, const char *id, bool quiet, char *rootfs, size_t size,
		       struct err *e)
{
	static const char *const top[] = { "", "/locks" };
	const char *const entry_steps[] = { "/entries" };
	char lock[PATH_MAX], entry[PATH_MAX], who[96];
	struct err why = { 0 };
	int r, use;

	r = steps_ok(dir, top, 2, e);
	if (r <= 0)
		return r;
	use = open_use(dir, id, lock, sizeof(lock), e);
	if (use == -2)
		return 0; /* root never made this entry */
	if (use < 0)
		return -1;
	/* Lock first, then look: once we hold it, no gc can take the entry away. */
	if (cache_try_lock(use, LOCK_SH) < 0) {
		cache_lock_holder(use, who, sizeof(who));
		if (!quiet)
			fprintf(stderr, "ctrun: the node's shared cache entry %s is locked by %s (%s): "
				"using your own cache instead\n", id, who, lock);
		close(use);
		return 0;
	}
	r = steps_ok(dir, entry_steps, 1, e);
	if (r == 1 && (xsnprintf(entry, sizeof(entry), "%s/entries/%s", dir, id) < 0 ||
		       xsnprintf(rootfs, size, "%s/rootfs", entry) < 0))
		r = err_set(e, EXIT_CTRUN, "shared cache %s: path too long", dir);
	if (r == 1) {
		const char *const mine[] = { entry, rootfs };

		for (size_t i = 0; r == 1 && i < 2; i++)
			r = step_ok(mine[i], false, e);
	}
	if (r == 1 && meta_ok(entry, &why) != 1) {
		/* Not ours to use, but not a reason to fail the run: say why, once. */
		if (!quiet)
			fprintf(stderr, "ctrun: not using the node's shared cache entry: %s\n",
				why.msg);
		r = 0;
	}
	if (r == 1)
		cache_hold(use);
	else
		close(use);
	return r;
}

int cache_shared_verify(const char *entry, const char *rootfs, struct err *e)
{
	if (meta_ok(entry, e) != 1 || image_check_shared(rootfs, e) < 0)
		return err_wrap(e, "shared cache entry %s cannot be trusted (remove it with "
				"ctrun cache remove --shared, then create it again)", entry);
	return 0;
}
