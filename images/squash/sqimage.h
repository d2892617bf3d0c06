/* sqimage.h - a squashfs image written as its layers stream in.
 *
 * A registry pull used to unpack every layer into a tree on disk and then
 * run mksquashfs over it: the tree was written, read back and compressed,
 * one step after the other.  Here each layer is read once (mlayer.c): its
 * members change a tree in memory (mtree.h) by the layer rules of layer.c,
 * and the data of each regular file goes straight into the squashfs's data
 * blocks, compressed by libsquashfs's worker threads (one per CPU) while the
 * next member is read.  sqimage_finish then sanitizes the tree as
 * image_sanitize does, writes its inodes and directories, and, where later
 * layers replaced or deleted so many files that their data would be more
 * than 1/16 of the image, moves the data still used together first
 * (compressed blocks are copied, not compressed again).
 *
 * The result is what `mksquashfs DIR -all-root -no-xattrs` makes of the
 * unpacked tree: every inode root's, no xattrs, no device nodes, FIFOs or
 * sockets, no setuid/setgid bits, nothing writable by group or others.
 * libsquashfs is dlopen'd (sqfs_dl.h). */
#ifndef CTRUN_SQIMAGE_H
#define CTRUN_SQIMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "mtree.h"

/* Compressors, by their squashfs ids. */
enum sq_comp {
	SQ_GZIP = 1,
	SQ_XZ = 4,
	SQ_LZ4 = 5,
	SQ_ZSTD = 6,
};

struct sqimage_opts {
	enum sq_comp comp;
	int level;         /* 0: the compressor's default (-1: xz's level 0); lz4: >= 1 is HC */
	bool raw_data;     /* data and fragment blocks stored uncompressed (mksquashfs -noD -noF) */
	unsigned threads;  /* compressing threads; 0: one per CPU this process may use */
};

struct sqimage;

/* The compressors ctrun writes by default (docs/images.md, "Compression"):
 * pulled images ([registry] compression), and saved containers ([cache]
 * compression: --save, ctrun save). */
#define SQ_COMP_PULL "lz4"
#define SQ_COMP_SAVE "gzip:1"

/* Pure: a setting's compressor, "gzip[:1-9]", "lz4[:hc]", "zstd[:1-22]",
 * "xz[:0-9]" or "none" (data blocks as they are, the tables gzip'd: enroot's
 * `-noD` choice), into o (threads 0).  -1 with e (EXIT_USAGE) naming `what`
 * ("[registry] compression") and what it may be. */
int sqimage_comp_parse(const char *spec, const char *what, struct sqimage_opts *o,
		       struct err *e);
/* Pure: o as the setting would write it ("zstd:3"), in buf. */
const char *sqimage_comp_name(const struct sqimage_opts *o, char *buf, size_t size);
/* Pure: o as mksquashfs's arguments ("-comp", "zstd", "-Xcompression-level",
 * level), into argv (room for 4; `level` holds the number); their count. */
size_t sqimage_comp_args(const struct sqimage_opts *o, char *level, size_t size,
			 const char **argv);

/* A new image written into fd (an empty regular file opened for reading
 * and writing; not closed).  -1 with e. */
int sqimage_open(struct sqimage **out, int fd, const struct sqimage_opts *o, struct err *e);
/* The tree being built. */
struct mtree *sqimage_tree(struct sqimage *s);

/* The data of regular file ino, in order: begin, data (any number of
 * times, n > 0), end.  -1 with e (a worker's failure, a full disk). */
int sqimage_file_begin(struct sqimage *s, struct minode *ino, struct err *e);
int sqimage_file_data(struct sqimage *s, const void *p, size_t n, struct err *e);
int sqimage_file_end(struct sqimage *s, struct err *e);

/* sqstored.c: the stored squashfs open at fd (read only; the caller trusts
 * it as the store does) as the bottom of s, before anything else is put in
 * s: its tree becomes s's (as if its `layers` layers had been applied),
 * its data and fragment blocks are copied into s as they are.  It must
 * have s's compressor, block size and data compression, and no xattrs.
 * *unpacked gets what it holds as a layer would count it (its files' sizes,
 * 512 bytes plus its name and link target per name: unpack_limit_member).
 * -1 with e: s is then unusable (free it). */
int sqimage_base(struct sqimage *s, int fd, unsigned layers, unsigned long long *unpacked,
		 struct err *e);

/* Sanitizes the tree and writes everything but the data: the image is
 * complete in fd.  -1 with e. */
int sqimage_finish(struct sqimage *s, struct err *e);
/* Frees s (after sqimage_finish or instead of it). */
void sqimage_free(struct sqimage *s);

/* Bytes of data in the image that no file uses (replaced or deleted by a
 * later layer), and all data bytes, as sqimage_finish found them before
 * any compaction. */
void sqimage_dead(const struct sqimage *s, unsigned long long *dead, unsigned long long *data);

#endif
