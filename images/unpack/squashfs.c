/* squashfs.c - squashfs and SIF images, unpacked by unsquashfs.
 *
 * unsquashfs is what enroot and apptainer use to unpack, and it is parallel
 * (one thread per CPU), so wrapping it costs only a fork/exec; writing our own
 * squashfs reader would be slower and larger.  A SIF's root file system is a
 * squashfs at an offset in the file: unsquashfs -o reads it in place, no copy.
 * Measured against plain unsquashfs in docs/benchmarks-cache.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sif.h"
#include "spawn.h"
#include "unpack.h"
#include "util.h"

/* The squashfs superblock fields we check (little-endian, squashfs 4.0). */
#define SQFS_MAGIC 0x73717368u   /* "hsqs" */
#define SQFS_BYTES_USED_OFF 40
#define SQFS_PAD 4096ULL

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

unsigned long long squashfs_window(unsigned long long bytes_used, unsigned long long avail)
{
	unsigned long long w;

	/* The kernel reads whole device blocks (1 KiB) and refuses a file
	 * system that claims more than its device; mksquashfs pads to 4 KiB.
	 * A rounding that overflows means no room: avail bounds it anyway. */
	w = bytes_used > ~0ULL - (SQFS_PAD - 1) ? ~0ULL
						 : (bytes_used + SQFS_PAD - 1) / SQFS_PAD * SQFS_PAD;
	return w < avail ? w : avail;
}

/* The squashfs at `offset` must fit in `size` bytes: a SIF partition whose
 * file system claims more would make unsquashfs read the next object.
 * *used (if not NULL) gets its bytes_used. */
int squashfs_check(const char *path, unsigned long long offset, unsigned long long size,
		   unsigned long long *used, struct err *e)
{
	unsigned char sb[96];
	ssize_t n;
	int fd = open_regular(path, O_RDONLY, NULL);

	if (fd < 0)
		return errno == EINVAL ? err_set(e, EXIT_CTRUN, "%s: not a regular file", path)
				       : err_sys(e, EXIT_CTRUN, "%s", path);
	n = pread(fd, sb, sizeof(sb), (off_t)offset);
	close(fd);
	if (n != (ssize_t)sizeof(sb))
		return err_set(e, EXIT_CTRUN, "%s: no squashfs superblock at byte %llu", path, offset);
	if (le(sb, 4) != SQFS_MAGIC)
		return err_set(e, EXIT_CTRUN, "%s: no squashfs at byte %llu", path, offset);
	if (le(sb + 28, 2) != 4)
		return err_set(e, EXIT_CTRUN, "%s: squashfs version %u.x is not supported", path,
			       (unsigned)le(sb + 28, 2));
	if (size != 0 && le(sb + SQFS_BYTES_USED_OFF, 8) > size)
		return err_set(e, EXIT_CTRUN, "%s: squashfs at byte %llu claims %llu bytes, its "
			       "partition has %llu", path, offset,
			       (unsigned long long)le(sb + SQFS_BYTES_USED_OFF, 8), size);
	if (used != NULL)
		*used = le(sb + SQFS_BYTES_USED_OFF, 8);
	return 0;
}

int squashfs_compressor(const char *path, unsigned long long offset, struct err *e)
{
	unsigned char sb[24];
	ssize_t n;
	int fd = open_regular(path, O_RDONLY, NULL);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	n = pread(fd, sb, sizeof(sb), (off_t)offset);
	close(fd);
	if (n != (ssize_t)sizeof(sb) || le(sb, 4) != SQFS_MAGIC)
		return err_set(e, EXIT_CTRUN, "%s: no squashfs at byte %llu", path, offset);
	return (int)le(sb + 20, 2);
}

int squashfs_unpack(const char *path, unsigned long long offset, unsigned long long size,
		    const char *dest, bool progress, struct err *e)
{
	char off[32], rel[4096];
	/* Exit 2 = "non-fatal errors": for an unprivileged user, the device nodes
	 * and the xattrs it may not create.  The runtime provides /dev. */
	static const int nonroot_ok[] = { 2, -1 };
	char *argv[16];
	int n = 0;

	if (squashfs_check(path, offset, size, NULL, e) < 0)
		return -1;
	snprintf(off, sizeof(off), "%llu", offset);
	argv[n++] = "unsquashfs";
	argv[n++] = "-f"; /* dest exists (an empty directory we made) */
	argv[n++] = "-d";
	argv[n++] = (char *)dest;
	if (!progress)
		argv[n++] = "-no-progress";
	/* Never the image's xattrs: file capabilities are security.capability. */
	argv[n++] = "-no-xattrs";
	if (offset != 0) {
		argv[n++] = "-o";
		argv[n++] = off;
	}
	/* unsquashfs takes no "--": keep a relative name from reading as an option. */
	if (path[0] == '-') {
		if (xsnprintf(rel, sizeof(rel), "./%s", path) < 0)
			return err_set(e, EXIT_CTRUN, "%s: path too long", path);
		path = rel;
	}
	argv[n++] = (char *)path;
	argv[n] = NULL;
	if (spawn_wait(argv, progress, geteuid() != 0 ? nonroot_ok : NULL, e) < 0)
		return err_wrap(e, "%s", path);
	return 0;
}

int squashfs_region(const char *path, enum image_kind kind, unsigned long long *offset,
		    unsigned long long *size, struct err *e)
{
	struct sif_partition p;
	struct stat st;
	unsigned long long used;
	int fd, r;

	*offset = *size = 0;
	if (kind == IMAGE_SIF) {
		fd = open_regular(path, O_RDONLY, NULL);
		if (fd < 0)
			return errno == EINVAL ? err_set(e, EXIT_CTRUN, "%s: not a regular file", path)
					       : err_sys(e, EXIT_CTRUN, "%s", path);
		r = sif_read_fd(fd, &p, e);
		close(fd);
		if (r < 0)
			return err_wrap(e, "%s", path);
		if (p.fstype != SIF_FS_SQUASH)
			return err_set(e, EXIT_CTRUN, "%s: the primary partition is not a squashfs "
				       "(fstype %d; encrypted and ext3 SIFs are not supported)", path,
				       p.fstype);
		*offset = p.offset;
		*size = p.size;
	} else if (kind != IMAGE_SQUASHFS) {
		return err_set(e, EXIT_CTRUN, "%s: not a squashfs or SIF image", path);
	} else {
		if (stat(path, &st) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", path);
		*size = (unsigned long long)st.st_size;
	}
	if (squashfs_check(path, *offset, *size, &used, e) < 0)
		return -1;
	*size = squashfs_window(used, *size);
	return 0;
}

int sif_unpack(const char *path, const char *dest, bool progress, struct err *e)
{
	unsigned long long offset, size;

	if (squashfs_region(path, IMAGE_SIF, &offset, &size, e) < 0)
		return -1;
	return squashfs_unpack(path, offset, size, dest, progress, e);
}
