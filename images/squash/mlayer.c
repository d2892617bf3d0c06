/* mlayer.c - a layer and a config onto a streamed squashfs's tree (see
 * mlayer.h).  What a member does is decided as for layer.c (layer_decide,
 * unpack/layerrule.h); read beside layer.c: each step of doing it here is
 * the step there, on the tree; where layer.c leaves the work to libarchive's disk writer
 * (ARCHIVE_EXTRACT_UNLINK | SECURE_*), what that writer does is spelled
 * out (libarchive 3.6, archive_write_disk_posix.c: restore_entry). */
#include "mlayer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "unpack/layerrule.h"

static const char zeros[65536];

/* The parent directory of a member, resolved in the tree. */
static int resolve_dir(void *arg, const char *dir, char *out, size_t size)
{
	return mtree_resolve(arg, dir, true, out, size);
}

/* Zeros for a sparse file's holes: counted like data (see mlayer.h). */
static int fill(struct sqimage *s, unsigned long long n, struct unpack_limit *l, struct err *e)
{
	if (unpack_limit_add(l, n, e) < 0)
		return -1;
	while (n > 0) {
		size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);

		if (sqimage_file_data(s, zeros, k, e) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/* The member's data into ino (a new regular file): as copy_data in layer.c,
 * each block counted before it is written, holes filled, the file as long
 * as its header says. */
static int file_data(struct archive *in, struct sqimage *s, struct minode *ino,
		     struct archive_entry *ent, struct unpack_limit *l, const char *what,
		     const char *name, struct err *e)
{
	la_int64_t size = archive_entry_size(ent), pos = 0, off;
	const void *buf;
	size_t len;
	int r = ARCHIVE_EOF;

	if (sqimage_file_begin(s, ino, e) < 0)
		return -1;
	while (size > 0 && (r = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off < pos)
			return err_set(e, EXIT_CTRUN, "%s: '%s': data blocks out of order", what, name);
		if ((off > pos && fill(s, (unsigned long long)(off - pos), l, e) < 0) ||
		    unpack_limit_add(l, len, e) < 0 || sqimage_file_data(s, buf, len, e) < 0)
			return -1;
		pos = off + (la_int64_t)len;
	}
	if (r != ARCHIVE_EOF)
		return err_set(e, EXIT_CTRUN, "%s: '%s': %s", what, name, archive_error_string(in));
	if (size > pos && fill(s, (unsigned long long)(size - pos), l, e) < 0)
		return -1;
	return sqimage_file_end(s, e);
}

static void set_meta(struct minode *ino, struct archive_entry *ent)
{
	ino->mode = (ino->mode & S_IFMT) | ((uint32_t)archive_entry_mode(ent) & 07777);
	ino->mtime = (int64_t)archive_entry_mtime(ent);
}

/* A hard link `base` in dir to the resolved path `link`. */
static struct mnode *hard_link(struct archive *in, struct sqimage *s, struct mnode *dir,
			       const char *base, const char *link, struct archive_entry *ent,
			       struct unpack_limit *l, const char *what, const char *name,
			       struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	struct mnode *to = mtree_lookup(t, link), *n;
	struct minode *data;

	if (to == NULL) {
		err_set(e, EXIT_CTRUN, "%s: '%s': Hard-link target '%s' does not exist.", what, name,
			link);
		return NULL;
	}
	if (mnode_is_dir(to)) {
		err_set(e, EXIT_CTRUN, "%s: '%s': Can't create '%s': a hard link to a directory",
			what, name, base);
		return NULL;
	}
	n = mtree_link(t, dir, base, to->ino);
	if (n == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	/* pax and cpio let a hard link carry data: it becomes the file's, for
	 * every name of it.  Written into an inode of its own (the squashfs
	 * writer may still be filling in the old data's), which the file takes
	 * at the end (mtree_settle): no name is visited, so a layer of a
	 * million such links costs a million steps, not a million squared. */
	if (archive_entry_size(ent) > 0 && (to->ino->mode & S_IFMT) == S_IFREG) {
		data = mtree_rewrite(t, to->ino);
		if (data == NULL) {
			err_sys(e, EXIT_CTRUN, "%s", what);
			return NULL;
		}
		set_meta(to->ino, ent);
		if (file_data(in, s, data, ent, l, what, name, e) < 0)
			return NULL;
	}
	return n;
}

/* A new inode of the member's type at dir/base (nothing is there). */
static struct mnode *create(struct archive *in, struct sqimage *s, struct mnode *dir,
			    const char *base, struct archive_entry *ent, struct unpack_limit *l,
			    const char *what, const char *name, struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	mode_t type = archive_entry_filetype(ent);
	const char *target = archive_entry_symlink(ent);
	struct minode *ino;
	struct mnode *n;

	if (type == AE_IFLNK && (target == NULL || *target == '\0')) {
		err_set(e, EXIT_CTRUN, "%s: '%s': Can't create '%s': an empty symlink", what, name,
			base);
		return NULL;
	}
	/* Anything else is a regular file, as libarchive writes it. */
	if (type != AE_IFDIR && type != AE_IFLNK && type != AE_IFIFO)
		type = AE_IFREG;
	ino = mtree_inode(t, (uint32_t)type);
	if (ino == NULL ||
	    (type == AE_IFLNK && mtree_set_target(t, ino, target, strlen(target)) < 0) ||
	    (n = mtree_link(t, dir, base, ino)) == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	set_meta(ino, ent);
	if (type == AE_IFREG && file_data(in, s, ino, ent, l, what, name, e) < 0)
		return NULL;
	return n;
}

/* Marks what exists of a resolved path as the current layer's. */
static void mark_path(struct mtree *t, const char *resolved)
{
	char buf[PATH_MAX];
	struct mnode *n = NULL;

	snprintf(buf, sizeof(buf), "%s", resolved);
	for (;;) {
		char *slash;

		n = mtree_lookup(t, buf);
		if (n != NULL || (slash = strrchr(buf, '/')) == NULL)
			break;
		*slash = '\0';
	}
	if (n != NULL)
		mtree_mark(t, n);
}

/* The member at d->path, over what is there (d->link: the hard link's
 * target). */
static int put(struct archive *in, struct sqimage *s, struct archive_entry *ent,
	       const struct layer_decision *d, struct unpack_limit *l, const char *what,
	       const char *name, struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	bool hl = d->action == LAYER_LINK, want_dir = archive_entry_filetype(ent) == AE_IFDIR && !hl;
	char parent[PATH_MAX];
	struct mnode *dir, *old, *n;

	/* make_room: a directory replaced by a file, or the reverse. */
	old = mtree_lookup(t, d->path);
	if (old == NULL && errno != ENOENT)
		return err_sys(e, EXIT_CTRUN, "%s: replacing '%s'", what, d->path);
	if (old != NULL && mnode_is_dir(old) != want_dir) {
		mtree_remove(t, old);
		old = NULL;
	}
	/* libarchive skips a hard link to itself (a warning), after make_room;
	 * layer.c still counts the path as its layer's. */
	if (hl && strcmp(d->path, d->link) == 0) {
		mark_path(t, d->path);
		return 0;
	}
	/* The resolved parent: d->path without its last component. */
	if (d->base == d->path)
		snprintf(parent, sizeof(parent), ".");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(d->base - d->path - 1), d->path);
	dir = mtree_mkparents(t, parent);
	if (dir == NULL)
		return err_sys(e, EXIT_CTRUN, "%s: '%s': Can't create '%s'", what, name, parent);
	if (old != NULL && want_dir) {
		/* A directory over a directory: kept, its mode and time the member's. */
		set_meta(old->ino, ent);
		n = old;
	} else {
		/* ARCHIVE_EXTRACT_UNLINK: what is there goes first, then the new one. */
		if (old != NULL)
			mtree_remove(t, old);
		n = hl ? hard_link(in, s, dir, d->base, d->link, ent, l, what, name, e)
		       : create(in, s, dir, d->base, ent, l, what, name, e);
		if (n == NULL)
			return -1;
	}
	mtree_mark(t, n);
	return 0;
}

/* One member; returns 0, or -1 with e filled. */
static int apply_entry(struct archive *in, struct sqimage *s, struct archive_entry *ent,
		       struct unpack_limit *l, const char *what, struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	struct layer_decision d;
	struct layer_member m;
	struct mnode *n;

	/* Its name (never NULL after this) and link targets: bounded and counted. */
	if (unpack_limit_member(l, ent, what, e) < 0)
		return -1;
	m = (struct layer_member){ .name = archive_entry_pathname(ent),
				   .type = archive_entry_filetype(ent),
				   .hardlink = archive_entry_hardlink(ent) };
	/* No kernel refuses a name over NAME_MAX here: the rule does. */
	if (layer_decide(&m, resolve_dir, t, true, what, &d, e) < 0)
		return -1;
	switch (d.action) {
	case LAYER_SKIP:
		return 0;
	case LAYER_OPAQUE:
		n = mtree_lookup(t, d.path);
		if (n != NULL && mnode_is_dir(n))
			mtree_clear_dir(t, n);
		return 0;
	case LAYER_WHITEOUT:
		n = mtree_lookup(t, d.path);
		if (n == NULL && errno != ENOENT)
			return err_sys(e, EXIT_CTRUN, "%s: whiteout of '%s'", what, d.path);
		if (n != NULL)
			mtree_remove(t, n);
		return 0;
	case LAYER_PUT:
	case LAYER_LINK:
		break;
	}
	return put(in, s, ent, &d, l, what, m.name, e);
}

int mlayer_apply(struct archive *in, struct sqimage *s, const char *what, struct unpack_limit *l,
		 struct err *e)
{
	struct archive_entry *ent;
	int r;

	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", what);
	sqimage_tree(s)->layer++;
	/* The tree is bounded after each member: one member adds at most its
	 * name, its target (each under PATH_MAX) and its missing parents. */
	while ((r = archive_read_next_header(in, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN)
		if (apply_entry(in, s, ent, l, what, e) < 0 ||
		    unpack_limit_tree(l, sqimage_tree(s)->bytes, what, e) < 0)
			return -1;
	if (r != ARCHIVE_EOF)
		return err_set(e, EXIT_CTRUN, "%s: %s", what, archive_error_string(in));
	return 0;
}

/* ---- the image config ------------------------------------------------------ */

/* mkdir -p of path inside the image (inroot_mkdirs): its directory. */
static struct mnode *mkdirs(struct mtree *t, const char *path)
{
	char res[PATH_MAX];

	path += strspn(path, "/");
	if (mtree_resolve(t, *path != '\0' ? path : ".", true, res, sizeof(res)) < 0)
		return NULL;
	return mtree_mkparents(t, res);
}

/* write_etc in imgconfig.c: etc/NAME replaced by a new file of text. */
static int write_etc(struct sqimage *s, struct mnode *etc, const char *name, const char *text,
		     size_t len, struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	char tmp[64];
	struct mnode *old;
	struct minode *ino;

	/* The temporary name imgconfig.c writes through, removed there first. */
	snprintf(tmp, sizeof(tmp), ".%s.ctrun-tmp", name);
	if ((old = mtree_child(t, etc, tmp)) != NULL)
		mtree_remove(t, old);
	if ((old = mtree_child(t, etc, name)) != NULL)
		mtree_remove(t, old);
	ino = mtree_inode(t, S_IFREG | 0644);
	if (ino == NULL || mtree_link(t, etc, name, ino) == NULL)
		return err_sys(e, EXIT_CTRUN, "/etc/%s", name);
	ino->mtime = t->now;
	if (sqimage_file_begin(s, ino, e) < 0 || sqimage_file_data(s, text, len, e) < 0 ||
	    sqimage_file_end(s, e) < 0)
		return err_wrap(e, "/etc/%s", name);
	return 0;
}

int mlayer_config(const struct imgconfig *c, struct sqimage *s, struct err *e)
{
	struct mtree *t = sqimage_tree(s);
	struct mnode *etc;
	char *text = NULL;
	size_t len = 0;
	int rv = -1;

	if (imgconfig_environment(c, &text, &len, e) < 0)
		return -1;
	etc = mkdirs(t, "etc");
	if (etc == NULL) {
		err_sys(e, EXIT_CTRUN, "creating /etc in the image");
		goto out;
	}
	if (write_etc(s, etc, "environment", text, len, e) < 0)
		goto out;
	free(text);
	text = NULL;
	if (imgconfig_rc(c, &text, &len, e) < 0 || write_etc(s, etc, "rc", text, len, e) < 0)
		goto out;
	/* As docker and enroot do: the working directory exists in the image. */
	if (c->workdir != NULL && mkdirs(t, c->workdir) == NULL) {
		err_sys(e, EXIT_CTRUN, "config.WorkingDir %s: cannot create it in the image",
			c->workdir);
		goto out;
	}
	rv = 0;
out:
	free(text);
	return rv;
}
