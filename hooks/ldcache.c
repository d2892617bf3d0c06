/* ldcache.c - glibc ld.so.cache parser (see ldcache.h).  Layout from
 * glibc's sysdeps/generic/dl-cache.h: a 48-byte header, nlibs entries of
 * 24 bytes, then the strings; string offsets count from the header. */
#include "ldcache.h"

#include <stdlib.h>
#include <string.h>

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define NEW_HEADER 48
#define NEW_ENTRY 24
#define OLD_ENTRY 12

#define FLAG_TYPE_MASK 0x00ff
#define FLAG_ELF_LIBC6 0x0003
#define FLAG_REQUIRED_MASK 0xff00

#if defined(__x86_64__) && !defined(__ILP32__)
#define FLAG_NATIVE 0x0300 /* FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define FLAG_NATIVE 0x0a00 /* FLAG_AARCH64_LIB64 */
#elif defined(__powerpc64__)
#define FLAG_NATIVE 0x0500 /* FLAG_POWERPC_LIB64 */
#else
#define FLAG_NATIVE 0x0000
#endif

static uint32_t get32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A NUL-terminated string at base+off, entirely inside [base, base+size). */
static const char *string_at(const char *base, size_t size, uint32_t off)
{
	if (off >= size || memchr(base + off, '\0', size - off) == NULL)
		return NULL;
	return base + off;
}

/* Where the new-format header starts: 0, or after the old table. */
static int find_new_header(const char *buf, size_t len, size_t *start, struct err *e)
{
	size_t old_magic = sizeof(OLD_MAGIC) - 1, off;
	uint32_t nold;

	if (len >= sizeof(NEW_MAGIC) - 1 && memcmp(buf, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0) {
		*start = 0;
		return 0;
	}
	if (len < 16 || memcmp(buf, OLD_MAGIC, old_magic) != 0)
		return err_set(e, EXIT_CTRUN, "not a glibc ld.so.cache (unknown magic)");
	/* struct cache_file { char magic[11]; uint32 nlibs; entries[] }: the
	 * count sits at offset 12 after padding. */
	nold = get32(buf + 12);
	if (nold > (len - 16) / OLD_ENTRY)
		return err_set(e, EXIT_CTRUN, "ld.so.cache: old table of %u entries exceeds the file",
			       nold);
	off = 16 + (size_t)nold * OLD_ENTRY;
	off = (off + 7) & ~(size_t)7; /* ALIGN_CACHE: alignof(struct cache_file_new) */
	if (off + sizeof(NEW_MAGIC) - 1 > len ||
	    memcmp(buf + off, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) != 0)
		return err_set(e, EXIT_CTRUN, "ld.so.cache: old format without the new table "
			       "(glibc < 2.2 caches are not supported)");
	*start = off;
	return 0;
}

int hook_ldcache_parse(const char *buf, size_t len, struct hook_ldcache_entry **out, size_t *n,
		       struct err *e)
{
	const char *base;
	size_t start = 0, size, nlibs, k = 0;
	struct hook_ldcache_entry *v;

	*out = NULL;
	*n = 0;
	if (find_new_header(buf, len, &start, e) < 0)
		return -1;
	base = buf + start;
	size = len - start;
	if (size < NEW_HEADER)
		return err_set(e, EXIT_CTRUN, "ld.so.cache: truncated header");
	/* flags byte: 0 = endianness unknown (old writers), 2 = little, 3 = big. */
	if (base[28] != 0 && base[28] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 2 : 3))
		return err_set(e, EXIT_CTRUN, "ld.so.cache: written for the other byte order");
	nlibs = get32(base + 20);
	if (nlibs > (size - NEW_HEADER) / NEW_ENTRY)
		return err_set(e, EXIT_CTRUN, "ld.so.cache: %zu entries exceed the file", nlibs);
	v = calloc(nlibs > 0 ? nlibs : 1, sizeof(*v));
	if (v == NULL)
		return err_sys(e, EXIT_CTRUN, "ld.so.cache");
	for (size_t i = 0; i < nlibs; i++) {
		const char *ent = base + NEW_HEADER + i * NEW_ENTRY;
		const char *key = string_at(base, size, get32(ent + 4));
		const char *value = string_at(base, size, get32(ent + 8));

		if (key == NULL || value == NULL) {
			free(v);
			return err_set(e, EXIT_CTRUN, "ld.so.cache: entry %zu points outside the file",
				       i);
		}
		v[k].flags = (int32_t)get32(ent);
		v[k].key = key;
		v[k].value = value;
		v[k].hwcap = get64(ent + 16);
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

bool hook_ldcache_native(int32_t flags)
{
	return (flags & FLAG_TYPE_MASK) == FLAG_ELF_LIBC6 &&
	       (flags & FLAG_REQUIRED_MASK) == FLAG_NATIVE;
}
