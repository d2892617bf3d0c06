/* sqtree.c - the end of a streamed squashfs: the tree sanitized as
 * image_sanitize sanitizes an unpacked one, then its inodes and directories
 * written (see sqimage.h).
 *
 * Order in the inode table: every inode that is not a directory first, in
 * the order a sorted walk meets them (a directory's files lie together),
 * then the directories, each after everything below it, the root last: a
 * directory's entries name inodes whose places are known.  Every inode is
 * root's (mksquashfs -all-root: the store's rule, enroot's import too). */
#include "sqimage_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 256 /* as sanitize.c: directories deep */

struct out {
	struct sqimage *s;
	sqfs_meta_writer_t *im, *dm;
	sqfs_dir_writer_t *dw;
	sqfs_id_table_t *ids;
	sqfs_u16 root_idx;
	struct minode **files; /* non-directories, in number order */
	size_t nfiles, cap;
	sqfs_u32 next;         /* the next inode number */
	struct err *e;
};

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct mnode *const *)a)->name, (*(struct mnode *const *)b)->name);
}

/* Relinks dir's entries in name order (squashfs directories are sorted). */
static int sort_dir(struct mnode *dir)
{
	size_t n = 0, i;
	struct mnode *k, **v;

	for (k = dir->kids; k != NULL; k = k->next)
		n++;
	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (v == NULL)
		return -1;
	for (i = 0, k = dir->kids; k != NULL; k = k->next)
		v[i++] = k;
	qsort(v, n, sizeof(*v), by_name);
	for (i = 0; i < n; i++) {
		v[i]->prev = i > 0 ? v[i - 1] : NULL;
		v[i]->next = i + 1 < n ? v[i + 1] : NULL;
	}
	dir->kids = v[0];
	free(v);
	return 0;
}

static bool special(uint32_t mode)
{
	mode &= S_IFMT;
	return mode == S_IFIFO || mode == S_IFSOCK || mode == S_IFCHR || mode == S_IFBLK;
}

/* sanitize.c's walk: special files removed (a FIFO at rest makes its reader
 * hang), setuid, setgid and group/other write bits cleared, nesting
 * bounded; and each directory sorted. */
static int sanitize(struct mtree *t, struct mnode *dir, int depth, struct err *e)
{
	struct mnode *k, *next;

	for (k = dir->kids; k != NULL; k = next) {
		next = k->next;
		if (special(k->ino->mode)) {
			mtree_remove(t, k);
			continue;
		}
		if ((k->ino->mode & S_IFMT) != S_IFLNK)
			k->ino->mode = (k->ino->mode & S_IFMT) | (k->ino->mode & 01755);
		if (!mnode_is_dir(k))
			continue;
		if (depth >= MAX_DEPTH)
			return err_set(e, EXIT_CTRUN, "directories nested deeper than %d (at .../%s)",
				       MAX_DEPTH, k->name);
		if (sanitize(t, k, depth + 1, e) < 0)
			return -1;
	}
	if (sort_dir(dir) < 0)
		return err_sys(e, EXIT_CTRUN, "writing the squashfs");
	return 0;
}

/* Numbers the non-directories (each inode once, whatever its names). */
static int number_files(struct out *o, struct mnode *dir)
{
	for (struct mnode *k = dir->kids; k != NULL; k = k->next) {
		if (mnode_is_dir(k)) {
			if (number_files(o, k) < 0)
				return -1;
			continue;
		}
		if (k->ino->num != 0)
			continue;
		if (o->nfiles == o->cap) {
			size_t cap = o->cap ? o->cap * 2 : 1024;
			struct minode **v = realloc(o->files, cap * sizeof(*v));

			if (v == NULL)
				return err_sys(o->e, EXIT_CTRUN, "writing the squashfs");
			o->files = v;
			o->cap = cap;
		}
		o->files[o->nfiles++] = k->ino;
		k->ino->num = ++o->next;
	}
	return 0;
}

static void number_dirs(struct out *o, struct mnode *dir)
{
	for (struct mnode *k = dir->kids; k != NULL; k = k->next)
		if (mnode_is_dir(k))
			number_dirs(o, k);
	dir->ino->num = ++o->next;
}

static sqfs_u32 mtime32(int64_t t)
{
	return t < 0 ? 0 : t > 0xFFFFFFFFLL ? 0xFFFFFFFFu : (sqfs_u32)t;
}

/* Fills the base, writes inode and records where it went. */
static int put(struct out *o, struct minode *ino, sqfs_inode_generic_t *sq)
{
	sqfs_u64 block;
	sqfs_u32 offset;
	int r;

	sq->base.mode = (sqfs_u16)ino->mode;
	sq->base.mod_time = mtime32(ino->mtime);
	sq->base.inode_number = ino->num;
	sq->base.uid_idx = o->root_idx;
	sq->base.gid_idx = o->root_idx;
	sqfs_meta_writer_get_position(o->im, &block, &offset);
	ino->ref = block << 16 | offset;
	r = sqfs_meta_writer_write_inode(o->im, sq);
	return r != 0 ? sq_fail(o->s, r, "inode table", o->e) : 0;
}

static int put_file(struct out *o, struct minode *ino)
{
	sqfs_inode_generic_t *sq;
	size_t len;
	int r;

	if ((ino->mode & S_IFMT) == S_IFREG) {
		sq = ino->data;
		if (sq == NULL)
			return sq_fail(o->s, SQFS_ERROR_INTERNAL, "a file without data", o->e);
		if (ino->nlink > 1 && sq->base.type == SQFS_INODE_FILE &&
		    sqfs_inode_make_extended(sq) != 0)
			return sq_fail(o->s, SQFS_ERROR_INTERNAL, "inode", o->e);
		/* One name left of a stored image's hard link (sqstored.c): the
		 * basic inode a new file gets, where it can be one. */
		if (sq->base.type == SQFS_INODE_EXT_FILE)
			sq->data.file_ext.nlink = ino->nlink;
		if (ino->nlink <= 1 && sq->base.type == SQFS_INODE_EXT_FILE)
			sqfs_inode_make_basic(sq);
		return put(o, ino, sq);
	}
	/* A symlink (sanitize left nothing else). */
	len = ino->target != NULL ? strlen(ino->target) : 0;
	sq = calloc(1, sizeof(*sq) + len + 1);
	if (sq == NULL)
		return err_sys(o->e, EXIT_CTRUN, "writing the squashfs");
	sq->base.type = SQFS_INODE_SLINK;
	sq->data.slink.nlink = ino->nlink;
	sq->data.slink.target_size = (sqfs_u32)len;
	memcpy(sq->extra, ino->target != NULL ? ino->target : "", len);
	r = put(o, ino, sq);
	free(sq);
	return r;
}

static int put_dir(struct out *o, struct mnode *dir)
{
	sqfs_inode_generic_t *sq;
	size_t subdirs = 0;
	int r;

	for (struct mnode *k = dir->kids; k != NULL; k = k->next)
		if (mnode_is_dir(k) && put_dir(o, k) < 0)
			return -1;
	r = sqfs_dir_writer_begin(o->dw, 0);
	for (struct mnode *k = dir->kids; r == 0 && k != NULL; k = k->next) {
		subdirs += mnode_is_dir(k);
		r = sqfs_dir_writer_add_entry(o->dw, k->name, k->ino->num, k->ino->ref,
					      (sqfs_u16)k->ino->mode);
	}
	if (r == 0)
		r = sqfs_dir_writer_end(o->dw);
	if (r != 0)
		return sq_fail(o->s, r, "directory table", o->e);
	/* The root's parent: one past the last inode, as mksquashfs writes it. */
	sq = sqfs_dir_writer_create_inode(o->dw, 2 + subdirs, 0xFFFFFFFF,
					  dir->parent != NULL ? dir->parent->ino->num : o->next + 1);
	if (sq == NULL)
		return sq_fail(o->s, SQFS_ERROR_ALLOC, "directory inode", o->e);
	r = put(o, dir->ino, sq);
	sqfs_free(sq);
	return r;
}

static int pad(struct sqimage *s, struct err *e)
{
	static const char zero[SQFS_DEVBLK_SIZE];
	sqfs_u64 size = s->file->size, rest = size % SQFS_DEVBLK_SIZE;
	int r;

	if (rest == 0)
		return 0;
	r = s->file->base.write_at(&s->file->base, size, zero, (size_t)(SQFS_DEVBLK_SIZE - rest));
	return r != 0 ? sq_fail(s, r, "padding", e) : 0;
}

static int tables(struct out *o)
{
	struct sqimage *s = o->s;
	sqfs_file_t *f = &s->file->base;
	int r;

	o->ids = sqfs_id_table_create(0);
	o->im = sqfs_meta_writer_create(f, s->cmp, 0);
	o->dm = sqfs_meta_writer_create(f, s->cmp, SQFS_META_WRITER_KEEP_IN_MEMORY);
	o->dw = o->dm != NULL ? sqfs_dir_writer_create(o->dm, 0) : NULL;
	if (o->ids == NULL || o->im == NULL || o->dw == NULL)
		return sq_fail(s, SQFS_ERROR_ALLOC, "tables", o->e);
	r = sqfs_id_table_id_to_index(o->ids, 0, &o->root_idx);
	if (r != 0)
		return sq_fail(s, r, "id table", o->e);
	if (number_files(o, &s->tree.root) < 0)
		return -1;
	number_dirs(o, &s->tree.root);
	s->super.inode_count = o->next;
	s->super.inode_table_start = s->file->size;
	for (size_t i = 0; i < o->nfiles; i++)
		if (put_file(o, o->files[i]) < 0)
			return -1;
	if (put_dir(o, &s->tree.root) < 0)
		return -1;
	r = sqfs_meta_writer_flush(o->im);
	if (r == 0)
		r = sqfs_meta_writer_flush(o->dm);
	if (r != 0)
		return sq_fail(s, r, "inode table", o->e);
	s->super.root_inode_ref = s->tree.rootino.ref;
	s->super.directory_table_start = s->file->size;
	r = sqfs_meta_write_write_to_file(o->dm);
	if (r != 0)
		return sq_fail(s, r, "directory table", o->e);
	r = sqfs_frag_table_write(s->frag, f, &s->super, s->cmp);
	if (r != 0)
		return sq_fail(s, r, "fragment table", o->e);
	r = sqfs_id_table_write(o->ids, f, &s->super, s->cmp);
	if (r != 0)
		return sq_fail(s, r, "id table", o->e);
	s->super.bytes_used = s->file->size;
	r = sqfs_super_write(&s->super, f);
	if (r != 0)
		return sq_fail(s, r, "super block", o->e);
	return pad(s, o->e);
}

int sqimage_finish(struct sqimage *s, struct err *e)
{
	struct out o = { .s = s, .e = e };
	int r, rv;

	if (s->finished || s->in_file)
		return err_set(e, EXIT_CTRUN, "writing the squashfs: finished twice, or inside a file");
	s->finished = true;
	r = sqfs_block_processor_finish(s->proc);
	if (r != 0)
		return sq_fail(s, r, "file data", e);
	/* Every block is in now: a file written again takes its new data. */
	mtree_settle(&s->tree);
	if (sanitize(&s->tree, &s->tree.root, 0, e) < 0 || sq_compact(s, e) < 0)
		return -1;
	rv = tables(&o);
	sqfs_destroy(o.dw);
	sqfs_destroy(o.dm);
	sqfs_destroy(o.im);
	sqfs_destroy(o.ids);
	free(o.files);
	return rv;
}
