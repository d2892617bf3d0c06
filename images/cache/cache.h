/* cache.h - the node cache of unpacked images, race-free among concurrent tasks.
 *
 * Layout under cfg->dir (node-local: see docs/images.md):
 *   entries/<id>/rootfs      the unpacked image (what cache_get_rootfs returns)
 *   entries/<id>/meta.json   image path, kind, creation time
 *   entries/<id>/bytes       disk use, measured by the first list/gc (not at creation)
 *   entries/<id>/last-use    its mtime is the last use (gc is LRU)
 *   entries/<id>.ctrun-tmp.<host>.<pid>   an entry under construction
 *   locks/<id>.lock          flock held by the one creator of <id>
 *   locks/<id>.use           flock shared by users of <id>, exclusive for gc/remove
 *   log                      one line per creation
 * An entry exists iff entries/<id> exists: publication is one rename(2) of a
 * finished temp, so a crash at any moment leaves at most a stale temp, which
 * the next creator of that id removes. */
#ifndef CTRUN_CACHE_H
#define CTRUN_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct cache_cfg {
	const char *dir;                 /* node-local cache root */
	unsigned long long budget_bytes; /* gc target; 0 = unlimited */
	/* Bound on what one image unpacks to (a compressed archive's
	 * decompressed copy, its layers' bytes); 0 = none.  A bomb stops
	 * there instead of filling the cache's file system. */
	unsigned long long max_unpacked;
	bool progress;                   /* progress bar on stderr (caller checks isatty) */
	bool quiet;                      /* no "waiting for" message */
	/* dir is the node's shared cache: root fills it (`ctrun cache create
	 * --shared`, a prolog) and every user reads it.  Made 0755, lock files
	 * 0644; only root may create in it. */
	bool shared;
	/* A shared cache that cache_get_rootfs looks in first, read only; an
	 * entry there is used as it is (NULL = none). */
	const char *lookup;
};

/* Size of a cache id including the NUL ("<kind>-<32 hex>"). */
#define CACHE_ID_MAX 64

/* The identity of an image file: must change when the file is replaced or modified (path, dev, ino,
 * size, mtime_ns, ctime_ns — no full content hash of 20 GB files at job start). */
int cache_identity(const char *image, char *id, size_t size, struct err *e);

/* Returns the path of the unpacked rootfs for `image` in this node's cache, creating it if missing.
 * Exactly one creator per entry among concurrent callers (tasks of one or several steps, one node);
 * the others wait (say "ctrun: waiting for <host> cache entry <id> being created by pid N" on stderr
 * once) and then use it. Creation builds under a temporary name and publishes by rename(2), so a
 * crash or kill -9 at any moment never leaves an entry that looks valid; the next caller cleans up
 * and recreates. Touches the entry's last-use time (for gc).
 * A directory image is returned as is (its realpath), never copied.
 * With c->lookup, an entry of the node's shared cache is used if it has one:
 * that cache must be root's and writable by no one else from its root down
 * to the entry (else -1: a shared cache that others can write could hand
 * every user a prepared image); a missing one is simply not used.
 * The calling process keeps a shared lock on the entry until it exits, so
 * `ctrun cache gc/remove` never deletes a rootfs a running container uses:
 * keep the process that called this alive while the container runs. */
int cache_get_rootfs(const struct cache_cfg *c, const char *image, char *rootfs, size_t size, struct err *e);

/* Whether the node's caches (c->lookup, then c->dir) already hold an entry
 * for image: then using it is the fastest start. */
bool cache_has_entry(const struct cache_cfg *c, const char *image);

/* Generic "create once under a lock, publish by rename" used also for runtime-owned caches (enroot's data dir):
 * calls create(tmp_path, arg) only if `final_path` doesn't exist; same guarantees.
 * tmp_path is a sibling of final_path (same file system, so rename(2) works) that does
 * not exist yet when create is called; create makes it (file or directory) and returns 0,
 * or returns -1 (with errno set) and the temp is removed.  Stale temps of dead creators
 * of the same final_path are removed before creating. */
int cache_create_once(const char *lock_path, const char *final_path, int (*create)(const char *tmp_path, void *arg), void *arg, struct err *e);

/* Like cache_create_once, with a struct err for create to fill (preferred by new code). */
int cache_create_once_e(const char *lock_path, const char *final_path,
			int (*create)(const char *tmp_path, void *arg, struct err *e), void *arg,
			bool quiet, struct err *e);

/* The default cache root when config says nothing: $CTRUN_CACHE_DIR, else /tmp/ctrun-cache-$UID. */
int cache_default_dir(char *buf, size_t size, struct err *e);

/* The cached entries, for `ctrun cache list` and gc. */
struct cache_entry {
	char id[CACHE_ID_MAX];
	char image[4096];            /* image path recorded at creation */
	unsigned long long bytes;    /* disk usage of the rootfs */
	long long last_use;          /* seconds since the epoch */
};
int cache_list(const struct cache_cfg *c, struct cache_entry **out, size_t *n, struct err *e);
/* Removes entry `id` (rename away under its lock, then delete). 0 also if absent when !must_exist. */
int cache_remove(const struct cache_cfg *c, const char *id, bool must_exist, struct err *e);
/* Removes least recently used entries until the total is <= budget; entries in use
 * (the shared lock of cache_get_rootfs held) are skipped, as are stale temps removed. *freed gets the bytes removed. */
int cache_gc(const struct cache_cfg *c, unsigned long long budget, unsigned long long *freed, struct err *e);

#endif
