/* layer.c - one layer onto a root directory, whiteouts included (see layer.h);
 * what each member does is decided by layer_decide (layerrule.h), as for the
 * tree in memory of a streamed squashfs (squash/mlayer.c). */
#include "layer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_dl.h"
#include "archive_filter.h"
#include "inroot.h"
#include "layerrule.h"
#include "rootpath.h"

/* The paths this layer wrote (and their ancestors): an opaque marker must
 * hide lower layers' files, not the ones its own layer already put there. */
struct pathset {
	char **slot;
	size_t cap, n;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static bool set_has(const struct pathset *s, const char *p)
{
	if (s->cap == 0)
		return false;
	for (size_t i = hash(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->slot[i] == NULL)
			return false;
		if (strcmp(s->slot[i], p) == 0)
			return true;
	}
}

static int set_add_one(struct pathset *s, const char *p)
{
	if (set_has(s, p))
		return 0;
	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		char **nslot = calloc(ncap, sizeof(*nslot));

		if (nslot == NULL)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			size_t j;

			if (s->slot[i] == NULL)
				continue;
			for (j = hash(s->slot[i]) & (ncap - 1); nslot[j] != NULL; j = (j + 1) & (ncap - 1))
				;
			nslot[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = nslot;
		s->cap = ncap;
	}
	for (size_t i = hash(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->slot[i] == NULL) {
			s->slot[i] = strdup(p);
			if (s->slot[i] == NULL)
				return -1;
			s->n++;
			return 0;
		}
	}
}

/* Adds p and every ancestor of it ("a/b/c", "a/b", "a"). */
static int set_add(struct pathset *s, const char *p)
{
	char buf[PATH_MAX], *slash;

	if (strlen(p) >= sizeof(buf))
		return -1;
	strcpy(buf, p);
	for (;;) {
		if (set_add_one(s, buf) < 0)
			return -1;
		slash = strrchr(buf, '/');
		if (slash == NULL)
			return 0;
		*slash = '\0';
	}
}

static void set_free(struct pathset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

static bool keep_own(const char *path, void *arg)
{
	return set_has(arg, path);
}

/* What the layer being applied did so far. */
struct seen {
	struct pathset own;     /* the paths it wrote */
	struct pathset cleared; /* the directories an opaque marker of it cleared */
};

/* The parent directory of a member, resolved in the root directory. */
static int resolve_dir(void *arg, const char *dir, char *out, size_t size)
{
	return inroot_resolve(*(int *)arg, dir, INROOT_CHROOT, true, out, size, NULL);
}

static bool is_root(void)
{
	return geteuid() == 0;
}

/* Makes room for the member at `target`: a directory in a lower layer replaced
 * by a file (or the reverse) must go first; libarchive would refuse to rmdir it. */
static int make_room(int rootfd, const char *target, bool want_dir)
{
	struct stat st;

	if (fstatat(rootfd, target, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(st.st_mode) == want_dir)
		return 0;
	return rootpath_remove(rootfd, target);
}

/* -1 with e filled. */
static int copy_data(struct archive *in, struct archive *out, struct unpack_limit *l,
		     const char *what, const char *name, struct err *e)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK) {
		/* Counted before it is written: a bomb stops at the limit. */
		if (unpack_limit_add(l, len, e) < 0)
			return -1;
		if (archive_write_data_block(out, buf, len, off) < ARCHIVE_WARN)
			break;
	}
	if (r == ARCHIVE_EOF)
		return 0;
	return err_set(e, EXIT_CTRUN, "%s: '%s': %s", what, name,
		       archive_error_string(archive_errno(out) ? out : in));
}

/* The member at d->path (d->link: the hard link's target). */
static int put(struct archive *in, struct archive *disk, int rootfd, struct archive_entry *ent,
	       const struct layer_decision *d, struct unpack_limit *l, const char *what,
	       const char *name, struct err *e)
{
	if (d->action == LAYER_LINK)
		archive_entry_set_hardlink(ent, d->link);
	if (make_room(rootfd, d->path, archive_entry_filetype(ent) == AE_IFDIR) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: replacing '%s'", what, d->path);
	archive_entry_set_pathname(ent, d->path);
	if (archive_write_header(disk, ent) < ARCHIVE_WARN)
		return err_set(e, EXIT_CTRUN, "%s: '%s': %s", what, name,
			       archive_error_string(disk));
	if (archive_entry_size(ent) > 0 && copy_data(in, disk, l, what, name, e) < 0)
		return -1;
	if (archive_write_finish_entry(disk) < ARCHIVE_WARN)
		return err_set(e, EXIT_CTRUN, "%s: '%s': %s", what, name,
			       archive_error_string(disk));
	return 0;
}

/* One member; returns 0, or -1 with e filled. */
static int apply_entry(struct archive *in, struct archive *disk, int rootfd,
		       struct archive_entry *ent, struct seen *seen, struct unpack_limit *l,
		       const char *what, struct err *e)
{
	struct layer_decision d;
	struct layer_member m;

	/* Its name (never NULL after this) and link targets: bounded and counted. */
	if (unpack_limit_member(l, ent, what, e) < 0)
		return -1;
	m = (struct layer_member){ .name = archive_entry_pathname(ent),
				   .type = archive_entry_filetype(ent),
				   .hardlink = archive_entry_hardlink(ent) };
	/* The kernel refuses a name over NAME_MAX when it is written. */
	if (layer_decide(&m, resolve_dir, &rootfd, false, what, &d, e) < 0)
		return -1;
	switch (d.action) {
	case LAYER_SKIP:
		return 0;
	case LAYER_OPAQUE:
		/* Once a layer: what is there after that is its own (a walk
		 * per marker would be quadratic in the layer). */
		if (set_has(&seen->cleared, d.path))
			return 0;
		if (rootpath_clear_dir(rootfd, d.path, keep_own, &seen->own) < 0 ||
		    set_add_one(&seen->cleared, d.path) < 0)
			return err_sys(e, EXIT_CTRUN, "%s: opaque directory '%s'", what, d.path);
		return 0;
	case LAYER_WHITEOUT:
		if (rootpath_remove(rootfd, d.path) < 0)
			return err_sys(e, EXIT_CTRUN, "%s: whiteout of '%s'", what, d.path);
		return 0;
	case LAYER_PUT:
	case LAYER_LINK:
		break;
	}
	if (put(in, disk, rootfd, ent, &d, l, what, m.name, e) < 0)
		return -1;
	if (set_add(&seen->own, d.path) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	return 0;
}

int layer_apply(struct archive *in, const char *root, const char *what, struct unpack_limit *l,
		struct err *e)
{
	int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_UNLINK |
		    ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
		    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
	struct seen seen = { 0 };
	struct archive *disk = NULL;
	struct archive_entry *ent;
	int rootfd = -1, cwd = -1, r, rv = -1;

	/* Loaded already when `in` came from archive.c; a caller's own reader
	 * (the unit tests') comes from the same library, so the calls match. */
	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", what);
	/* Owners as the image says, as root; never its xattrs (file
	 * capabilities are security.capability). */
	if (is_root())
		flags |= ARCHIVE_EXTRACT_OWNER;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0 || cwd < 0) {
		err_sys(e, EXIT_CTRUN, "%s: open %s", what, rootfd < 0 ? root : ".");
		goto out;
	}
	disk = archive_write_disk_new();
	if (disk == NULL || archive_write_disk_set_options(disk, flags) != ARCHIVE_OK) {
		err_set(e, EXIT_CTRUN, "%s: libarchive writer", what);
		goto out;
	}
	/* libarchive's secure checks work on relative paths: extract with the
	 * root as working directory (ctrun is single-threaded here). */
	if (fchdir(rootfd) < 0) {
		err_sys(e, EXIT_CTRUN, "%s: chdir %s", what, root);
		goto out;
	}
	while ((r = archive_read_next_header(in, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN)
		if (apply_entry(in, disk, rootfd, ent, &seen, l, what, e) < 0)
			goto back;
	if (r != ARCHIVE_EOF) {
		err_set(e, EXIT_CTRUN, "%s: %s", what, archive_error_string(in));
		goto back;
	}
	/* Close applies the deferred directory modes and times. */
	if (archive_write_close(disk) != ARCHIVE_OK) {
		err_set(e, EXIT_CTRUN, "%s: %s", what, archive_error_string(disk));
		goto back;
	}
	rv = 0;
back:
	if (fchdir(cwd) < 0 && rv == 0)
		rv = err_sys(e, EXIT_CTRUN, "%s: back to the working directory", what);
out:
	if (disk != NULL)
		archive_write_free(disk);
	if (rootfd >= 0)
		close(rootfd);
	if (cwd >= 0)
		close(cwd);
	set_free(&seen.own);
	set_free(&seen.cleared);
	return rv;
}
