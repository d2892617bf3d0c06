/* cache_int.h - what cache.c, cache_entry.c, cache_shared.c and cache_gc.c share (not
 * for callers): cache.c's locks and paths, below the other three. */
#ifndef CTRUN_CACHE_INT_H
#define CTRUN_CACHE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "cache.h"

/* Marks a temp under construction: "<final>.ctrun-tmp.<host>.<pid>". */
#define CACHE_TMP_TAG ".ctrun-tmp."

/* Short host name (up to the first dot). */
void cache_hostname(char *host, size_t size);
/* Creates the root and its subdirectories; refuses one that others could
 * write.  A shared cache (c->shared) is root's only, 0755, made by root. */
int cache_root_check(const struct cache_cfg *c, struct err *e);
/* flock retrying EINTR. */
int cache_lock(int fd, int how);
/* "<dir>/<sub>/<id><suffix>" into buf (PATH_MAX). */
int cache_path(char *buf, size_t size, const struct cache_cfg *c, const char *sub,
	       const char *id, const char *suffix, struct err *e);
/* Disk use of the tree open as dirfd (st_blocks), not following links. */
unsigned long long cache_du(int dirfd);
/* Opens (creating) the use lock of entry id. */
int cache_open_use_lock(const struct cache_cfg *c, const char *id, struct err *e);

/* Keeps fd (a use lock, held shared) open until exit. */
void cache_hold(int fd);
/* flock(fd, how | LOCK_NB) retried for about 2 s; -1 with errno
 * EWOULDBLOCK when it stays taken.  For locks other users can open. */
int cache_try_lock(int fd, int how);
/* "pid N (uid U)" holding a lock on fd's file, from /proc/locks. */
void cache_lock_holder(int fd, char *out, size_t size);
/* cache_shared.c: the shared cache dir's entry for id: 1 with rootfs set and
 * its use lock held, 0 when there is none or it cannot be had now (said on
 * stderr unless quiet: the caller uses the user's own cache), -1 when the
 * cache itself cannot be trusted. */
int cache_shared_entry(const char *dir, const char *id, bool quiet, char *rootfs, size_t size,
		       struct err *e);
/* cache_shared.c: an existing shared entry's whole tree may be trusted
 * (meta.json's mark, every inode root's and unwritable by others). */
int cache_shared_verify(const char *entry, const char *rootfs, struct err *e);

#endif
