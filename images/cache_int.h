/* cache_int.h - what cache.c, cache_entry.c and cache_gc.c share (not for callers). */
#ifndef CTRUN_CACHE_INT_H
#define CTRUN_CACHE_INT_H

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

#endif
