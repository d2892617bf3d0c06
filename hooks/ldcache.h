/* ldcache.h - reading glibc's /etc/ld.so.cache.
 *
 * The host's dynamic linker cache is how the hook finds the driver's
 * user-space libraries wherever the distribution put them (/usr/lib64,
 * /usr/lib/x86_64-linux-gnu, /usr/lib/nvidia/...), the way
 * libnvidia-container does.  The parser is pure: bytes in, entries out,
 * every offset checked, so a truncated or hostile file is an error, never a
 * read out of bounds.  Formats: "glibc-ld.so.cache1.1" (glibc >= 2.32
 * writes only this) and the old "ld.so-1.7.0" with the new one appended. */
#ifndef CTRUN_HOOK_LDCACHE_H
#define CTRUN_HOOK_LDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct hook_ldcache_entry {
	const char *key;   /* soname, e.g. "libcuda.so.1" (points into the buffer) */
	const char *value; /* path, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so.1" */
	int32_t flags;     /* FLAG_ELF_LIBC6 | architecture bits */
	uint64_t hwcap;
};

/* Fills *out (malloc'd array, caller frees; strings point into buf, which
 * must stay alive and need not be NUL-terminated). */
int hook_ldcache_parse(const char *buf, size_t len, struct hook_ldcache_entry **out, size_t *n,
		       struct err *e);

/* True when an entry is a library this process's architecture loads
 * (libc6 ELF of the native ABI: "libc6,x86-64" on x86_64). */
bool hook_ldcache_native(int32_t flags);

#endif
