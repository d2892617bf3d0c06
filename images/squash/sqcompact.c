/* sqcompact.c - the data of a streamed squashfs that no file uses any more
 * (a later layer replaced or deleted the file after its blocks were
 * written), measured and, past 1/16 of the data, squeezed out.
 *
 * A layer is written as it is read, before the layers above it are known,
 * so a file that `pip install -U` replaces in a later layer has its old
 * blocks in the image already.  Each file's blocks are contiguous (the
 * block writer's deduplication may point two files at the same ones, or
 * a live file at a dead file's), so the ranges live files and fragment
 * blocks use are merged and moved down in order, and every file's start
 * and fragment block's location moved by as much as the range holding it.
 * Compressed blocks are moved, never compressed again. */
#include "sqimage_int.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define SIZE_MASK ((1u << 24) - 1) /* a block size without its "uncompressed" bit */
#define CHUNK (1u << 20)

struct range {
	sqfs_u64 start, end, to;
};

struct ranges {
	struct range *v;
	size_t n, cap;
};

static int add(struct ranges *r, sqfs_u64 start, sqfs_u64 len)
{
	if (len == 0)
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct range *v = realloc(r->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct range){ start, start + len, 0 };
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Bytes of the blocks of a file inode. */
static sqfs_u64 blocks_len(const sqfs_inode_generic_t *sq)
{
	size_t n = sqfs_inode_get_file_block_count(sq);
	sqfs_u64 len = 0;

	for (size_t i = 0; i < n; i++)
		len += sq->extra[i] & SIZE_MASK;
	return len;
}

static bool live_file(const struct minode *i)
{
	return i->nlink > 0 && (i->mode & 0170000) == 0100000 && i->data != NULL;
}

/* The ranges used, sorted and merged; *used their total. */
static int collect(struct sqimage *s, struct ranges *r, sqfs_u64 *used)
{
	size_t nfrag = sqfs_frag_table_get_size(s->frag), k = 0;

	for (struct minode *i = s->tree.inodes; i != NULL; i = i->all) {
		sqfs_u64 start;

		if (!live_file(i))
			continue;
		sqfs_inode_get_file_block_start(i->data, &start);
		if (add(r, start, blocks_len(i->data)) < 0)
			return -1;
	}
	for (sqfs_u32 f = 0; f < nfrag; f++) {
		sqfs_fragment_t fr;

		if (sqfs_frag_table_lookup(s->frag, f, &fr) == 0 &&
		    add(r, fr.start_offset, fr.size & SIZE_MASK) < 0)
			return -1;
	}
	if (r->n > 0)
		qsort(r->v, r->n, sizeof(*r->v), by_start);
	*used = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (k > 0 && r->v[i].start <= r->v[k - 1].end) {
			if (r->v[i].end > r->v[k - 1].end)
				r->v[k - 1].end = r->v[i].end;
			continue;
		}
		r->v[k++] = r->v[i];
	}
	r->n = k;
	for (size_t i = 0; i < r->n; i++)
		*used += r->v[i].end - r->v[i].start;
	return 0;
}

/* Bytes [from, from+len) to `to` (to < from: front to back is safe). */
static int move(struct sqfd *f, sqfs_u64 from, sqfs_u64 to, sqfs_u64 len, char *buf)
{
	while (len > 0) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK;
		int r = f->base.read_at(&f->base, from, buf, n);

		if (r == 0)
			r = f->base.write_at(&f->base, to, buf, n);
		if (r != 0)
			return r;
		from += n;
		to += n;
		len -= n;
	}
	return 0;
}

/* Where the byte at old offset x went. */
static sqfs_u64 moved(const struct ranges *r, sqfs_u64 x)
{
	size_t lo = 0, hi = r->n;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (r->v[mid].start <= x)
			lo = mid;
		else
			hi = mid;
	}
	return r->v[lo].to + (x - r->v[lo].start);
}

int sq_compact(struct sqimage *s, struct err *e)
{
	struct ranges r = { 0 };
	sqfs_u64 used, to = s->data_start;
	size_t nfrag;
	char *buf = NULL;
	int rv = -1, k;

	if (collect(s, &r, &used) < 0) {
		err_sys(e, EXIT_CTRUN, "writing the squashfs");
		goto out;
	}
	s->data = s->file->size - s->data_start;
	s->dead = s->data > used ? s->data - used : 0;
	if (s->dead * 16 <= s->data) {
		rv = 0;
		goto out;
	}
	buf = malloc(CHUNK);
	if (buf == NULL) {
		err_sys(e, EXIT_CTRUN, "writing the squashfs");
		goto out;
	}
	for (size_t i = 0; i < r.n; i++) {
		r.v[i].to = to;
		if (to != r.v[i].start &&
		    (k = move(s->file, r.v[i].start, to, r.v[i].end - r.v[i].start, buf)) != 0) {
			sq_fail(s, k, "compacting the data", e);
			goto out;
		}
		to += r.v[i].end - r.v[i].start;
	}
	for (struct minode *i = s->tree.inodes; i != NULL; i = i->all) {
		sqfs_u64 start;

		if (!live_file(i) || blocks_len(i->data) == 0)
			continue;
		sqfs_inode_get_file_block_start(i->data, &start);
		sqfs_inode_set_file_block_start(i->data, moved(&r, start));
	}
	nfrag = sqfs_frag_table_get_size(s->frag);
	for (sqfs_u32 f = 0; f < nfrag; f++) {
		sqfs_fragment_t fr;

		if (sqfs_frag_table_lookup(s->frag, f, &fr) == 0 && (fr.size & SIZE_MASK) != 0 &&
		    sqfs_frag_table_set(s->frag, f, moved(&r, fr.start_offset), fr.size) != 0) {
			sq_fail(s, SQFS_ERROR_INTERNAL, "fragment table", e);
			goto out;
		}
	}
	if ((k = s->file->base.truncate(&s->file->base, to)) != 0) {
		sq_fail(s, k, "compacting the data", e);
		goto out;
	}
	rv = 0;
out:
	free(buf);
	free(r.v);
	return rv;
}
