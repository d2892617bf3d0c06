/* archive_filter.c - the decompressors libarchive may use and the bound on
 * an image's unpacked size (see archive_filter.h). */
#include "archive_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define BLOCK 65536

/* The filters ctrun may enable, and for which set.  Left out: lrzip, lzop
 * and grzip (libarchive has no code of its own for them, only a program to
 * run); xz, lzma and lzip (liblzma without a memory limit). */
static const struct filter {
	const char *name;
	bool pulled; /* a pulled layer may use it */
} filters[] = { { "gzip", true }, { "zstd", true }, { "bzip2", false },
		{ "compress", false }, { "lz4", false } };
#define NFILTERS (sizeof(filters) / sizeof(*filters))

/* archive_dl's pointers are only known at run time: filters[i]'s function. */
static int (*support_of(size_t i))(struct archive *)
{
	switch (i) {
	case 0: return archive_read_support_filter_gzip;
	case 1: return archive_read_support_filter_zstd;
	case 2: return archive_read_support_filter_bzip2;
	case 3: return archive_read_support_filter_compress;
	default: return archive_read_support_filter_lz4;
	}
}

/* Which filters libarchive runs in process: ARCHIVE_OK, where ARCHIVE_WARN
 * means "will run an external program" (built without the library).  Probed
 * once on a reader that is never opened, so nothing is run. */
static unsigned in_process(void)
{
	static unsigned mask;
	static bool probed;

	if (probed)
		return mask;
	for (size_t i = 0; i < NFILTERS; i++) {
		struct archive *a = archive_read_new();

		if (a == NULL)
			continue;
		if (support_of(i)(a) == ARCHIVE_OK)
			mask |= 1u << i;
		archive_read_free(a);
	}
	probed = true;
	return mask;
}

static bool allowed(size_t i, enum filter_set set)
{
	return (in_process() & (1u << i)) && (set == FILTERS_ARCHIVE || filters[i].pulled);
}

void archive_filters_enable(struct archive *a, enum filter_set set)
{
	for (size_t i = 0; i < NFILTERS; i++)
		if (allowed(i, set))
			support_of(i)(a);
}

static const struct magic {
	const char *name;
	const char *bytes;
	size_t len;
} magics[] = {
	{ "gzip", "\x1f\x8b", 2 },
	{ "compress", "\x1f\x9d", 2 },
	{ "bzip2", "BZh", 3 },
	{ "xz", "\xfd" "7zXZ\0", 6 },
	{ "lzip", "LZIP", 4 },
	{ "zstd", "\x28\xb5\x2f\xfd", 4 },
	{ "lz4", "\x04\x22\x4d\x18", 4 },
	{ "lz4", "\x02\x21\x4c\x18", 4 },
	{ "lrzip", "LRZI", 4 },
	{ "lzop", "\x89LZO\0\r\n\x1a\n", 9 },
	{ "grzip", "GRZipII\0\x02\x04:)", 12 },
};

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The .lzma ("alone") format has no magic number: a properties byte of at
 * most 224, a dictionary size, the data's size (-1: unknown).  What
 * libarchive's bidder takes: a dictionary of 2^12..2^27 bytes, or a
 * multiple of 1 MiB from 3 to 63 MiB as xz's lzma writes when short of
 * memory. */
static bool is_lzma(const unsigned char *h, size_t n)
{
	uint32_t dict;
	bool usual, unknown_size;

	if (n < 13 || h[0] > (4 * 5 + 4) * 9 + 8)
		return false;
	dict = le32(h + 1);
	unknown_size = le32(h + 5) == UINT32_MAX && le32(h + 9) == UINT32_MAX;
	if (dict >= 1u << 12 && dict <= 1u << 27 && (dict & (dict - 1)) == 0)
		return true;
	usual = h[0] == 0x5d || h[0] == 0x5e;
	return usual && unknown_size && dict >= 3u << 20 && dict <= 63u << 20 &&
	       dict % (1u << 20) == 0;
}

const char *archive_filter_by_magic(const unsigned char *head, size_t n)
{
	/* A tar header (ustar, pax, GNU): a plain tar whatever its first name. */
	if (n >= 263 && memcmp(head + 257, "ustar", 5) == 0)
		return NULL;
	for (size_t i = 0; i < sizeof(magics) / sizeof(*magics); i++)
		if (n >= magics[i].len && memcmp(head, magics[i].bytes, magics[i].len) == 0)
			return magics[i].name;
	return is_lzma(head, n) ? "lzma" : NULL;
}

int archive_filter_check(const unsigned char *head, size_t n, enum filter_set set,
			 const char *what, struct err *e)
{
	const char *name = archive_filter_by_magic(head, n);
	size_t i = 0;

	if (name == NULL)
		return 0;
	while (i < NFILTERS && strcmp(filters[i].name, name) != 0)
		i++;
	if (i < NFILTERS && allowed(i, set))
		return 0;
	if (set == FILTERS_PULLED && (i == NFILTERS || !filters[i].pulled))
		return err_set(e, EXIT_CTRUN, "%s: compressed with %s, which a pulled layer may not "
			       "be (the OCI image spec's layers are tar, gzip or zstd): refused", what,
			       name);
	if (strcmp(name, "xz") == 0 || strcmp(name, "lzma") == 0 || strcmp(name, "lzip") == 0)
		return err_set(e, EXIT_CTRUN, "%s: compressed with %s, whose decoder takes the "
			       "memory the file's own header asks for (up to 4 GiB): refused; "
			       "decompress it first, or recompress it with gzip or zstd", what, name);
	return err_set(e, EXIT_CTRUN, "%s: compressed with %s, which libarchive here decompresses "
		       "only by running an external program; ctrun does not run one (recompress "
		       "it with gzip or zstd)", what, name);
}

int archive_filter_once(struct archive *a, const char *what, struct err *e)
{
	/* The last filter is "none", the file's own bytes. */
	if (archive_filter_count(a) <= 2)
		return 0;
	return err_set(e, EXIT_CTRUN, "%s: compressed more than once (%s inside %s), which no "
		       "image tool writes: refused", what, archive_filter_name(a, 0),
		       archive_filter_name(a, 1));
}

void size_str(unsigned long long v, char *out, size_t size)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };

	for (int i = 0; i < 4; i++) {
		unsigned long long u = 1ULL << (10 * (4 - i));

		if (v >= u && v % u == 0) {
			snprintf(out, size, "%llu %s", v / u, units[i]);
			return;
		}
	}
	for (int i = 0; i < 4; i++) {
		unsigned long long u = 1ULL << (10 * (4 - i));

		if (v >= u) {
			snprintf(out, size, "%.1f %s", (double)v / (double)u, units[i]);
			return;
		}
	}
	snprintf(out, size, "%llu bytes", v);
}

int unpack_limit_add(struct unpack_limit *l, unsigned long long n, struct err *e)
{
	char max[32];

	if (l == NULL || l->max == 0)
		return 0;
	l->used += n;
	if (l->used <= l->max)
		return 0;
	size_str(l->max, max, sizeof(max));
	return err_set(e, EXIT_CTRUN, "image %s unpacks to more than %s, the limit of [cache] "
		       "max_unpacked (CTRUN_CACHE_MAX_UNPACKED): raise it if the image is meant "
		       "to be that big", l->image, max);
}

bool unpack_limit_passed(const struct unpack_limit *l)
{
	return l != NULL && l->max != 0 && l->used > l->max;
}

/* A name or target's length, refused from PATH_MAX bytes on. */
static int path_len(const char *p, size_t *len, const char *what, const char *name,
		    const char *kind, struct err *e)
{
	*len = p != NULL ? strnlen(p, PATH_MAX) : 0;
	if (*len < PATH_MAX)
		return 0;
	return err_set(e, EXIT_CTRUN, "%s: member '%.64s%s': its %s is %d bytes or longer, more "
		       "than a path may be (open(2) and symlink(2) refuse it): refused", what, name,
		       strlen(name) > 64 ? "..." : "", kind, PATH_MAX);
}

int unpack_limit_member(struct unpack_limit *l, struct archive_entry *ent, const char *what,
			struct err *e)
{
	const char *name = archive_entry_pathname(ent);
	size_t n, s, h;

	if (name == NULL)
		return err_set(e, EXIT_CTRUN, "%s: a member has no name", what);
	if (path_len(name, &n, what, name, "name", e) < 0 ||
	    path_len(archive_entry_symlink(ent), &s, what, name, "symlink target", e) < 0 ||
	    path_len(archive_entry_hardlink(ent), &h, what, name, "hard-link target", e) < 0)
		return -1;
	return unpack_limit_add(l, 512 + n + s + h, e);
}

int unpack_limit_tree(const struct unpack_limit *l, size_t bytes, const char *what,
		      struct err *e)
{
	char max[32];

	if (l == NULL || l->max_tree == 0 || bytes <= l->max_tree)
		return 0;
	size_str(l->max_tree, max, sizeof(max));
	return err_set(e, EXIT_CTRUN, "%s: the image's file tree takes more than %s of memory, the "
		       "limit of [registry] max_tree (CTRUN_REGISTRY_MAX_TREE): raise it if the "
		       "image is meant to hold that many names", what, max);
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* An unnamed file (O_TMPFILE) in dest's parent directory: it goes when its
 * descriptor closes, whatever happens. */
static int tmp_beside(const char *dest, struct err *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX], *slash;
	int fd;

	if (xsnprintf(dir, sizeof(dir), "%s", dest) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", dest);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	fd = open(slash != NULL ? dir : ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* A file system without O_TMPFILE (NFS): named for an instant. */
		if (xsnprintf(tmp, sizeof(tmp), "%s/.ctrun-decompress.XXXXXX",
			      slash != NULL ? dir : ".") >= 0 &&
		    (fd = mkostemp(tmp, O_CLOEXEC)) >= 0)
			unlink(tmp);
	}
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "decompressing beside %s", dest);
	return fd;
}

int archive_decompress(const char *name, const char *open, const char *dest,
		       struct unpack_limit *l, struct progress *prog, struct err *e)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ent;
	const void *buf;
	size_t len;
	la_int64_t off;
	int fd = -1, r = 0;

	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	fd = tmp_beside(dest, e);
	if (fd < 0) {
		err_wrap(e, "%s", name);
		goto fail;
	}
	archive_filters_enable(a, FILTERS_ARCHIVE);
	archive_read_support_format_raw(a);
	if (archive_read_open_filename(a, open, BLOCK) != ARCHIVE_OK ||
	    (r = archive_filter_once(a, name, e)) < 0 ||
	    archive_read_next_header(a, &ent) != ARCHIVE_OK) {
		if (r == 0)
			err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
		goto fail;
	}
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		/* Counted before it is written: a bomb stops at the limit. */
		if (unpack_limit_add(l, len, e) < 0)
			goto fail;
		if (pwrite_all(fd, buf, len, (off_t)off) < 0) {
			err_sys(e, EXIT_CTRUN, "%s: decompressing beside %s", name, dest);
			goto fail;
		}
		progress_add(prog, (unsigned long long)len);
	}
	if (r != ARCHIVE_EOF) {
		err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
		goto fail;
	}
	archive_read_free(a);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	archive_read_free(a);
	return -1;
}
