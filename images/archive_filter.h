/* archive_filter.h - which decompressors libarchive may use, and the bound
 * on what an image may unpack to.
 *
 * archive_read_support_filter_all() also registers filters that libarchive
 * runs as external programs (lrzip, lzop, grzip; and gzip, xz... when it was
 * built without their library): an image would then pick a host program
 * that ctrun, often as root, runs on bytes the image controls.  ctrun
 * enables by name only the filters libarchive decompresses in its own code
 * (probed once: a filter that would need a program is left out), so a layer
 * in another compression is refused with its name. */
#ifndef CTRUN_ARCHIVE_FILTER_H
#define CTRUN_ARCHIVE_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "archive_dl.h"
#include "err.h"
#include "progress.h"

/* Enables on `a` the in-process filters among gzip, bzip2, compress, xz,
 * lzma, lzip, zstd and lz4 (needs archive_dl_load first). */
void archive_filters_enable(struct archive *a);

/* The compression whose magic number starts head ("gzip", "lrzip", ...),
 * NULL for none known (a plain tar).  Pure. */
const char *archive_filter_by_magic(const unsigned char *head, size_t n);

/* When head is compressed with a filter archive_filters_enable leaves out:
 * -1 with e saying so for `what` ("layer 2 (x): compressed with lrzip,
 * which ...").  Else 0. */
int archive_filter_check(const unsigned char *head, size_t n, const char *what, struct err *e);

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
