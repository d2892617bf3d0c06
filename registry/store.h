/* store.h - the image store's paths and records (layout in registry.h).
 * Everything is published by rename(2) of a finished file under tmp/, so
 * a reader never sees half of anything, and nothing here takes a lock:
 * the store may lie on a shared file system (no flock on NFS), and two
 * pullers of the same blob or image write the same bytes under their own
 * temporary names, the last rename winning. */
#ifndef CTRUN_STORE_H
#define CTRUN_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "ref.h"

/* Makes the store's folders (0700 for a user's own store; a site's shared
 * store keeps the modes its admin gave it). */
int store_init(const char *store, struct err *e);

/* The mode of the store's new folders: 0700, or 02770 in a group's
 * store (its root setgid and group-writable: docs/images.md). */
unsigned store_dir_mode(const char *store);

/* <store>/blobs/sha256/<hex> of a "sha256:<hex>" digest. */
int store_blob(const char *store, const char *digest, char *out, size_t size, struct err *e);
/* <store>/images/sha256-<hex>.sqsh */
int store_image(const char *store, const char *digest, char *out, size_t size, struct err *e);
/* <store>/tmp/<name>.<host>.<pid> */
int store_tmp(const char *store, const char *name, char *out, size_t size, struct err *e);

/* The digest recorded for the reference's tag (or, for a reference by an
 * index digest, the platform manifest chosen from it): 1 found, 0 none. */
int store_ref_read(const char *store, const struct image_ref *r, char *digest, size_t size,
		   struct err *e);
/* Records it (tmp + rename). `key` is the tag, or "@sha256-<hex>". */
int store_ref_write(const char *store, const struct image_ref *r, const char *key,
		    const char *digest, struct err *e);

/* Pure: "sha256:<64 lowercase hex>". */
bool digest_valid(const char *d);

#endif

/* The store's images, for `ctrun cache list` (store_admin.c). */
struct store_image {
	char digest[80];
	unsigned long long bytes;
	long long last_use; /* the file's atime or mtime, the later */
	char refs[512];     /* "HOST/REPO:TAG ..." recorded for it ("" none) */
};
int store_images(const char *store, struct store_image **out, size_t *n, struct err *e);
/* Removes the image of `what` (a digest, or a reference whose record
 * names it) and every record naming it: 1 removed, 0 none. */
int store_remove(const char *store, const char *what, struct err *e);
/* Removes the blob cache (layers are needed again only to pull another
 * image that shares them) and temporaries older than a day (a puller that
 * died); *freed gets the bytes. */
int store_gc(const char *store, unsigned long long *freed, struct err *e);
