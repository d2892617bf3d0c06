/* archive_filter.c - the decompressors libarchive may use and the bound on
 * an image's unpacked size (see archive_filter.h). */
#include "archive_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define BLOCK 65536

/* The filters an image may use: OCI layers are gzip or zstd, `docker
 * save | xz` and friends the rest.  lrzip, lzop and grzip are left out:
 * libarchive has no code of its own for them, only a program to run. */
static const char *const filters[] = { "gzip", "bzip2", "compress", "xz",
					"lzma", "lzip", "zstd", "lz4" };
#define NFILTERS (sizeof(filters) / sizeof(*filters))

/* archive_dl's pointers are only known at run time: filters[i]'s function. */
static int (*support_of(size_t i))(struct archive *)
{
	switch (i) {
	case 0: return archive_read_support_filter_gzip;
	case 1: return archive_read_support_filter_bzip2;
	case 2: return archive_read_support_filter_compress;
	case 3: return archive_read_support_filter_xz;
	case 4: return archive_read_support_filter_lzma;
	case 5: return archive_read_support_filter_lzip;
	case 6: return archive_read_support_filter_zstd;
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

void archive_filters_enable(struct archive *a)
{
	unsigned mask = in_process();

	for (size_t i = 0; i < NFILTERS; i++)
		if (mask & (1u << i))
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

const char *archive_filter_by_magic(const unsigned char *head, size_t n)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(*magics); i++)
		if (n >= magics[i].len && memcmp(head, magics[i].bytes, magics[i].len) == 0)
			return magics[i].name;
	return NULL;
}

int archive_filter_check(const unsigned char *head, size_t n, const char *what, struct err *e)
{
	const char *name = archive_filter_by_magic(head, n);
	unsigned mask = in_process();

	if (name == NULL)
		return 0;
	for (size_t i = 0; i < NFILTERS; i++)
		if (strcmp(filters[i], name) == 0 && (mask & (1u << i)))
			return 0;
	return err_set(e, EXIT_CTRUN, "%s: compressed with %s, which libarchive here decompresses "
		       "only by running an external program; ctrun does not run one (recompress "
		       "it with gzip or zstd)", what, name);
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
	int fd = -1, r;

	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	fd = tmp_beside(dest, e);
	if (fd < 0) {
		err_wrap(e, "%s", name);
		goto fail;
	}
	archive_filters_enable(a);
	archive_read_support_format_raw(a);
	if (archive_read_open_filename(a, open, BLOCK) != ARCHIVE_OK ||
	    archive_read_next_header(a, &ent) != ARCHIVE_OK) {
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
