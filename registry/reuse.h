/* reuse.h - which stored image a new one can be built on (layer reuse,
 * docs/images.md "Layer reuse").
 *
 * Next to each image it pulls, the store keeps images/sha256-<hex>.layers:
 * the digests of the image's layers, bottom first, one a line after the
 * line "ctrun-layers 1".  An image whose layers begin with all of a stored
 * image's is built from that image's squashfs (sqimage_base) and only the
 * layers above it: they alone are downloaded and unpacked.  The record is
 * written only for an image whose config made no directory (a WorkingDir
 * its layers did not hold): then the stored squashfs is exactly its layers
 * plus /etc/environment and /etc/rc, which the new image's config writes
 * again, and the image built on it is the one a full pull would make. */
#ifndef CTRUN_REUSE_H
#define CTRUN_REUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "unpack/archive_filter.h"
#include "err.h"
#include "manifest.h"
#include "registry.h"
#include "squash/sqimage.h"

/* The largest record read. */
#define REUSE_RECORD_MAX (64u << 10)

/* Pure: the number of layers of a record (text, len bytes) when they are
 * the first layers of m and fewer than all of them; 0 when not (or the
 * record is not one). */
size_t reuse_prefix(const char *text, size_t len, const struct manifest *m);

/* Pure: m's layers as a record, into buf (malloc'd, *len bytes); -1 ENOMEM. */
int reuse_record_text(const struct manifest *m, char **buf, size_t *len);

/* Writes the record of the image at sqsh (its .sqsh name's .layers; tmp +
 * rename).  -1 with e. */
int reuse_record_write(const char *store, const char *sqsh, const struct manifest *m,
		       struct err *e);

/* Pure: whether text (len bytes) is a record: the magic line, then one
 * or more lines each a valid digest, at most REUSE_RECORD_MAX bytes. */
bool reuse_record_valid(const char *text, size_t len);

/* Writes text (a record, reuse_record_valid) as the record of the image at
 * sqsh, as reuse_record_write does: what the image feed carries from the
 * node that pulled it (runner/deliver/feed.h).  -1 with e. */
int reuse_record_write_text(const char *store, const char *sqsh, const char *text, size_t len,
			    struct err *e);

/* The record of the image at sqsh in store, when there is one, trusted
 * and valid: 1 with *text (malloc'd, *len bytes), 0 none, -1 with e (the
 * store refused). */
int reuse_record_read(const char *store, const char *sqsh, char **text, size_t *len,
		      struct err *e);

/* The stored image with the most layers that m's layers begin with: its
 * digest ("sha256:<hex>") and the count into *k; 1 found (its squashfs
 * there and trusted), 0 none, -1 with e (the store refused). */
int reuse_find(const char *store, const struct manifest *m, char *digest, size_t size,
	       size_t *k, struct err *e);

/* The new image img (just opened on out, with opts) begun as the stored
 * image whose layers m's begin with, when there is one and [registry]
 * reuse allows: its squashfs goes into img (sqimage_base), what it holds
 * counts against lim, and *k gets its count of layers.  Anything doubtful
 * about it (said in one line unless quiet) and img is opened again, empty:
 * the full pull.  -1 with e only when the new image cannot be begun, or
 * when the stored image's tree alone passes lim's max_tree (e names it). */
int reuse_begin(const struct registry_cfg *c, const char *store, const struct manifest *m,
		const char *name, int out, const struct sqimage_opts *opts, struct sqimage **img,
		struct unpack_limit *lim, size_t *k, struct err *e);

#endif
