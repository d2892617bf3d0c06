/* archive_filter.h - which decompressors libarchive may use, and the bound
 * on what an image may unpack to.
 *
 * Each decompressor enabled is one whose memory its format bounds: gzip
 * (32 KiB), zstd (its window, up to 128 MiB: libzstd's default
 * ZSTD_d_windowLogMax, which libarchive keeps), and for an archive the user
 * gives also bzip2, compress and lz4 (a few MiB).  A pulled layer may only
 * be gzip or zstd (the OCI image spec's layers), whatever its media type
 * says.  xz, lzma and lzip are never enabled: their header sets liblzma's
 * dictionary (up to 4 GiB) and libarchive gives liblzma no memory limit.
 * Nor is archive_read_support_filter_all(), which also registers filters
 * that libarchive runs as external programs (lrzip, lzop, grzip; and gzip,
 * xz... when it was built without their library): an image would then pick
 * a host program that ctrun, often as root, runs on bytes the image
 * controls (a filter that would need one is probed once and left out).
 * A compression left out is refused by its magic bytes, named, before a
 * reader is set up; one compressed twice is refused once opened. */
#ifndef CTRUN_ARCHIVE_FILTER_H
#define CTRUN_ARCHIVE_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "archive_dl.h"
#include "err.h"
#include "progress.h"

/* What is read: an archive the user gives (--image FILE: the file and the
 * layers in it) or a layer pulled from a registry. */
enum filter_set { FILTERS_ARCHIVE, FILTERS_PULLED };

/* Enables on `a` the set's decompressors that libarchive runs in process
 * (needs archive_dl_load first). */
void archive_filters_enable(struct archive *a, enum filter_set set);

/* The compression whose magic number starts head ("gzip", "xz", "lrzip",
 * ...; "lzma", which has none, as libarchive's bidder knows it), NULL for
 * none known or a tar header (ustar at 257).  Pure. */
const char *archive_filter_by_magic(const unsigned char *head, size_t n);

/* When head (the first bytes, 512 of them where there are as many) is
 * compressed with a filter the set leaves out: -1 with e saying so for
 * `what` ("layer 2 (sha256:...): compressed with xz, which ...").  Else 0. */
int archive_filter_check(const unsigned char *head, size_t n, enum filter_set set,
			 const char *what, struct err *e);

/* After `a` is opened: -1 with e when its data are compressed more than
 * once (each decompressor takes its memory, and libarchive stacks up to 25
 * of them).  Else 0. */
int archive_filter_once(struct archive *a, const char *what, struct err *e);

/* An image's unpacked bytes counted against a bound ([cache] max_unpacked),
 * and, where its layers become a tree in memory (a pull: mlayer.c), the
 * memory of that tree ([registry] max_tree). */
struct unpack_limit {
	const char *image;            /* named in the message */
	unsigned long long max, used; /* max 0 = no bound */
	unsigned long long max_tree;  /* bytes; 0 = no bound */
};

/* "64 GiB", "1 MiB" (an exact multiple), "1.5 GiB", else "N bytes". */
void size_str(unsigned long long v, char *out, size_t size);

/* Adds n bytes; -1 with e naming the image, the limit and the setting to
 * raise once the total passes max. */
int unpack_limit_add(struct unpack_limit *l, unsigned long long n, struct err *e);
/* Whether l's bound was passed (its message needs no more context). */
bool unpack_limit_passed(const struct unpack_limit *l);

/* A layer member's header (layer.c and mlayer.c): 512 bytes for its tar
 * header plus the bytes of its name and of its link target, added to l
 * (NULL: no bound), so that long names and targets cost what they are; and
 * a name or link target of PATH_MAX bytes or more refused, as open(2) and
 * symlink(2) refuse it.  -1 with e naming `what` (the layer) and the member. */
int unpack_limit_member(struct unpack_limit *l, struct archive_entry *ent, const char *what,
			struct err *e);
/* A tree of `bytes` in memory against l->max_tree: -1 with e naming `what`
 * (the layer that passed it), the bound and the setting to raise. */
int unpack_limit_tree(const struct unpack_limit *l, size_t bytes, const char *what,
		      struct err *e);

/* Decompresses the (compressed) archive at `open` into an unnamed file
 * beside dest, counting against l; returns its descriptor, -1 on error
 * (the half-written file goes with its descriptor). */
int archive_decompress(const char *name, const char *open, const char *dest,
		       struct unpack_limit *l, struct progress *prog, struct err *e);

#endif
