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
#include "privdir.h"
#include "ref.h"

/* Makes the store's folders (0700 for a user's own store, 02770 whatever
 * the umask in a group's; a site's store keeps the modes its admin gave
 * it), then checks whom it can be trusted from (store_trust): -1 with e
 * naming the path and its owner when not. */
int store_init(const char *store, struct err *e);

/* The mode of the store's new folders: 0700, or 02770 in a group's
 * store (its root setgid and group-writable: docs/images.md). */
unsigned store_dir_mode(const char *store);

/* The mode of the files the store's users make (blobs, images, records):
 * readable by the group of a group's store whatever a member's umask; a
 * user's own store is private by its 0700 folders. */
#define STORE_FILE_MODE 0644

/* Makes the missing folders of path, which lies under store, with the
 * mode of the store's folders (exactly 02770 in a group's store). */
int store_mkdir(const char *store, const char *path, struct err *e);

/* store_trust.c: whom the store is trusted from.  1 when its root and its
 * folders are the caller's or root's and no one else can write them, or
 * it is a group's store (root setgid and group-writable) of a group the
 * caller is in, made by a member (t->group is then that group; any member
 * may own what is in it); for root, only a store no one but root can
 * write.  0 when the store does not exist; -1 with e (EXIT_CTRUN, one line
 * naming the path, what is wrong, its owner and mode) otherwise. */
int store_trust(const char *store, struct trust *t, struct err *e);
/* Opens a file of the store to read, never blocking (O_NONBLOCK: a FIFO
 * cannot stall the open) nor following a link, and only when it is a
 * regular file t trusts (trust_check): the descriptor, -2 when missing,
 * -1 with e.  *st gets its fstat. */
int store_open(const char *path, const struct trust *t, struct stat *st, struct err *e);
/* The image file path of the store, checked with its store: 1 there and
 * trusted, 0 missing, -1 refused (e). */
int store_image_check(const char *store, const char *path, struct err *e);

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
