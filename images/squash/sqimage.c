/* sqimage.c - a squashfs image written as its layers stream in: the
 * output file, the compressor, the block processor and the file data (see
 * sqimage.h; sqtree.c writes the tables, sqcompact.c compacts). */
#include "sqimage_int.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_SIZE SQFS_DEFAULT_BLOCK_SIZE /* 128 KiB, mksquashfs's default */
#define BACKLOG_PER_THREAD 10              /* blocks in flight per thread (tar2sqfs's) */

/* ---- libsquashfs's file interface over our descriptor --------------------- */

static int fd_read_at(sqfs_file_t *base, sqfs_u64 off, void *buf, size_t size)
{
	struct sqfd *f = (struct sqfd *)base;

	while (size > 0) {
		ssize_t n = pread(f->fd, buf, size, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			f->err = n < 0 ? errno : EIO;
			return n < 0 ? SQFS_ERROR_IO : SQFS_ERROR_OUT_OF_BOUNDS;
		}
		buf = (char *)buf + n;
		size -= (size_t)n;
		off += (sqfs_u64)n;
	}
	return 0;
}

static int fd_write_at(sqfs_file_t *base, sqfs_u64 off, const void *buf, size_t size)
{
	struct sqfd *f = (struct sqfd *)base;

	while (size > 0) {
		ssize_t n = pwrite(f->fd, buf, size, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			f->err = n < 0 ? errno : EIO;
			return SQFS_ERROR_IO;
		}
		buf = (const char *)buf + n;
		size -= (size_t)n;
		off += (sqfs_u64)n;
		if (off > f->size)
			f->size = off;
	}
	return 0;
}

static sqfs_u64 fd_get_size(const sqfs_file_t *base)
{
	return ((const struct sqfd *)base)->size;
}

static int fd_truncate(sqfs_file_t *base, sqfs_u64 size)
{
	struct sqfd *f = (struct sqfd *)base;

	if (ftruncate(f->fd, (off_t)size) < 0) {
		f->err = errno;
		return SQFS_ERROR_IO;
	}
	f->size = size;
	return 0;
}

static void fd_destroy(sqfs_object_t *o)
{
	free(o);
}

void sqfd_init(struct sqfd *f, int fd, sqfs_u64 size)
{
	f->base.base.destroy = fd_destroy;
	f->base.read_at = fd_read_at;
	f->base.write_at = fd_write_at;
	f->base.get_size = fd_get_size;
	f->base.truncate = fd_truncate;
	f->fd = fd;
	f->size = size;
}

int sq_fail(struct sqimage *s, int code, const char *what, struct err *e)
{
	const char *why;

	switch (code) {
	case SQFS_ERROR_ALLOC: why = "out of memory"; break;
	case SQFS_ERROR_IO: why = strerror(s->file != NULL && s->file->err ? s->file->err : EIO); break;
	case SQFS_ERROR_COMPRESSOR: why = "the compressor failed"; break;
	case SQFS_ERROR_OVERFLOW: why = "too large for a squashfs"; break;
	case SQFS_ERROR_UNSUPPORTED: why = "not supported by this libsquashfs"; break;
	default: why = "internal error"; break;
	}
	return err_set(e, EXIT_CTRUN, "writing the squashfs: %s: %s (libsquashfs error %d)", what, why,
		       code);
}

/* CPUs this process may run on (taskset, a Slurm step's cgroup). */
static unsigned cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned)n : 1;
}

/* libsquashfs 1.2's lz4 keeps a block compressed even when that made it
 * larger: the 4-byte id table becomes 5 bytes, which unsquashfs 4.5
 * refuses ("failed to read id table block"; the kernel reads it).  So
 * every compressor is wrapped: a block that does not shrink is stored as
 * it is, as mksquashfs stores it. */
struct shrink {
	sqfs_compressor_t base;
	sqfs_compressor_t *in;
};

static sqfs_s32 shrink_block(sqfs_compressor_t *base, const sqfs_u8 *in, sqfs_u32 size,
			     sqfs_u8 *out, sqfs_u32 outsize)
{
	struct shrink *w = (struct shrink *)base;
	sqfs_s32 r = w->in->do_block(w->in, in, size, out, outsize);

	return r > 0 && (sqfs_u32)r >= size ? 0 : r;
}

static void shrink_config(const sqfs_compressor_t *base, sqfs_compressor_config_t *cfg)
{
	const struct shrink *w = (const struct shrink *)base;

	w->in->get_configuration(w->in, cfg);
}

static int shrink_write_options(sqfs_compressor_t *base, sqfs_file_t *file)
{
	struct shrink *w = (struct shrink *)base;

	return w->in->write_options(w->in, file);
}

static int shrink_read_options(sqfs_compressor_t *base, sqfs_file_t *file)
{
	struct shrink *w = (struct shrink *)base;

	return w->in->read_options(w->in, file);
}

static void shrink_destroy(sqfs_object_t *o)
{
	sqfs_destroy(((struct shrink *)o)->in);
	free(o);
}

static sqfs_compressor_t *shrink_wrap(sqfs_compressor_t *in);

/* Each compressing thread gets a copy (block_processor.h). */
static sqfs_object_t *shrink_copy(const sqfs_object_t *o)
{
	sqfs_compressor_t *in = sqfs_copy(((const struct shrink *)o)->in);

	return in != NULL ? (sqfs_object_t *)shrink_wrap(in) : NULL;
}

/* Takes in (destroyed on failure). */
static sqfs_compressor_t *shrink_wrap(sqfs_compressor_t *in)
{
	struct shrink *w = calloc(1, sizeof(*w));

	if (w == NULL) {
		sqfs_destroy(in);
		return NULL;
	}
	w->in = in;
	w->base.base.destroy = shrink_destroy;
	w->base.base.copy = shrink_copy;
	w->base.get_configuration = shrink_config;
	w->base.write_options = shrink_write_options;
	w->base.read_options = shrink_read_options;
	w->base.do_block = shrink_block;
	return &w->base;
}

static int make_compressor(struct sqimage *s, struct err *e)
{
	sqfs_compressor_t *raw;
	sqfs_compressor_config_t cfg;
	sqfs_u16 flags = 0;
	int r;

	if (s->opts.comp == SQ_LZ4 && s->opts.level > 0)
		flags = SQFS_COMP_FLAG_LZ4_HC;
	r = sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)s->opts.comp, BLOCK_SIZE, flags);
	if (r == 0 && s->opts.level != 0 && s->opts.comp != SQ_LZ4)
		cfg.level = s->opts.level < 0 ? 0 : (sqfs_u32)s->opts.level;
	if (r == 0)
		r = sqfs_compressor_create(&cfg, &raw);
	if (r != 0)
		return sq_fail(s, r, "compressor", e);
	s->cmp = shrink_wrap(raw);
	if (s->cmp == NULL)
		return sq_fail(s, SQFS_ERROR_ALLOC, "compressor", e);
	cfg.flags |= SQFS_COMP_FLAG_UNCOMPRESS;
	r = sqfs_compressor_create(&cfg, &s->uncmp);
	return r != 0 ? sq_fail(s, r, "decompressor", e) : 0;
}

int sqimage_open(struct sqimage **out, int fd, const struct sqimage_opts *o, struct err *e)
{
	sqfs_block_processor_desc_t desc;
	struct sqimage *s;
	struct stat st;
	int r;

	*out = NULL;
	if (sqfs_dl_load(e) < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return err_set(e, EXIT_CTRUN, "writing the squashfs: not a regular file");
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return err_sys(e, EXIT_CTRUN, "writing the squashfs");
	s->opts = *o;
	if (s->opts.threads == 0)
		s->opts.threads = cpus();
	mtree_init(&s->tree, (int64_t)time(NULL));
	s->file = calloc(1, sizeof(*s->file));
	if (s->file == NULL) {
		err_sys(e, EXIT_CTRUN, "writing the squashfs");
		goto fail;
	}
	sqfd_init(s->file, fd, (sqfs_u64)st.st_size);
	if (make_compressor(s, e) < 0)
		goto fail;
	r = sqfs_super_init(&s->super, BLOCK_SIZE, (sqfs_u32)s->tree.now,
			    (SQFS_COMPRESSOR)s->opts.comp);
	if (r == 0)
		r = sqfs_super_write(&s->super, &s->file->base);
	if (r != 0) {
		sq_fail(s, r, "super block", e);
		goto fail;
	}
	r = s->cmp->write_options(s->cmp, &s->file->base);
	if (r < 0) {
		sq_fail(s, r, "compressor options", e);
		goto fail;
	}
	if (r > 0)
		s->super.flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;
	if (s->opts.raw_data)
		s->super.flags |= SQFS_FLAG_UNCOMPRESSED_DATA;
	s->data_start = s->file->size;
	s->bw = sqfs_block_writer_create(&s->file->base, SQFS_DEVBLK_SIZE, 0);
	s->frag = sqfs_frag_table_create(0);
	if (s->bw == NULL || s->frag == NULL) {
		sq_fail(s, SQFS_ERROR_ALLOC, "block writer", e);
		goto fail;
	}
	memset(&desc, 0, sizeof(desc));
	desc.size = sizeof(desc);
	desc.max_block_size = BLOCK_SIZE;
	desc.num_workers = s->opts.threads;
	desc.max_backlog = BACKLOG_PER_THREAD * s->opts.threads;
	desc.cmp = s->cmp;
	desc.wr = s->bw;
	desc.tbl = s->frag;
	desc.file = &s->file->base; /* fragments found equal are read back and compared */
	desc.uncmp = s->uncmp;
	r = sqfs_block_processor_create_ex(&desc, &s->proc);
	if (r != 0) {
		sq_fail(s, r, "block processor", e);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sqimage_free(s);
	return -1;
}

struct mtree *sqimage_tree(struct sqimage *s)
{
	return &s->tree;
}

int sqimage_file_begin(struct sqimage *s, struct minode *ino, struct err *e)
{
	sqfs_u32 flags = s->opts.raw_data ? SQFS_BLK_DONT_COMPRESS : 0;
	int r;

	/* The processor keeps &ino->data and fills it in from its threads
	 * until it is finished: ino stays allocated until then (mtree.c). */
	r = sqfs_block_processor_begin_file(s->proc, (sqfs_inode_generic_t **)&ino->data, NULL,
					    flags);
	if (r != 0)
		return sq_fail(s, r, "file data", e);
	s->tree.bytes += MTREE_FILE_COST; /* freed with the tree */
	s->in_file = true;
	return 0;
}

int sqimage_file_data(struct sqimage *s, const void *p, size_t n, struct err *e)
{
	/* (An empty append dereferences a block that is not there in 1.2.) */
	int r = n > 0 ? sqfs_block_processor_append(s->proc, p, n) : 0;

	return r != 0 ? sq_fail(s, r, "file data", e) : 0;
}

int sqimage_file_end(struct sqimage *s, struct err *e)
{
	int r = sqfs_block_processor_end_file(s->proc);

	s->in_file = false;
	return r != 0 ? sq_fail(s, r, "file data", e) : 0;
}

void sqimage_dead(const struct sqimage *s, unsigned long long *dead, unsigned long long *data)
{
	*dead = s->dead;
	*data = s->data;
}

static void free_inode(void *p)
{
	sqfs_free(p);
}

void sqimage_free(struct sqimage *s)
{
	if (s == NULL)
		return;
	/* Given up half-way: finished all the same, or libsquashfs 1.2 leaks
	 * the blocks it holds (a fragment block, one in flight). */
	if (s->proc != NULL && s->in_file)
		sqfs_block_processor_end_file(s->proc);
	if (s->proc != NULL && !s->finished)
		sqfs_block_processor_finish(s->proc);
	/* The processor first: its threads write into the tree's inodes. */
	sqfs_destroy(s->proc);
	mtree_free(&s->tree, free_inode);
	sqfs_destroy(s->frag);
	sqfs_destroy(s->bw);
	sqfs_destroy(s->uncmp);
	sqfs_destroy(s->cmp);
	sqfs_destroy(s->file);
	free(s);
}
