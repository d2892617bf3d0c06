/* sqimage_int.h - what the files of the squashfs writer share (sqimage.c
 * writes data, sqtree.c the tables, sqcompact.c moves the data together). */
#ifndef CTRUN_SQIMAGE_INT_H
#define CTRUN_SQIMAGE_INT_H

#include "sqfs_dl.h"
#include "sqimage.h"

/* libsquashfs's file interface over a descriptor ctrun opened. */
struct sqfd {
	sqfs_file_t base;
	int fd;
	sqfs_u64 size;
	int err; /* errno of the last failure */
};

/* f's methods over fd, of size bytes. */
void sqfd_init(struct sqfd *f, int fd, sqfs_u64 size);

struct sqimage {
	struct mtree tree;
	struct sqimage_opts opts;
	struct sqfd *file;
	sqfs_compressor_t *cmp, *uncmp;
	sqfs_block_writer_t *bw;
	sqfs_frag_table_t *frag;
	sqfs_block_processor_t *proc;
	sqfs_super_t super;
	sqfs_u64 data_start;              /* where data blocks begin */
	unsigned long long dead, data;    /* sqimage_dead */
	bool in_file, finished;
};

/* An SQFS_ERROR code as a message into e: "what: reason" (a failed write
 * names its errno: a full disk says so). */
int sq_fail(struct sqimage *s, int code, const char *what, struct err *e);

/* sqcompact.c: moves the data files still use to the front when more than
 * 1/16 of it is unused (s->dead, s->data set either way).  After the block
 * processor is finished, before the tables are written. */
int sq_compact(struct sqimage *s, struct err *e);

#endif
