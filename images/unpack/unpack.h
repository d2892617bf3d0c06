/* unpack.h - the per-format unpackers behind image_unpack (image.c dispatches). */
#ifndef CTRUN_UNPACK_H
#define CTRUN_UNPACK_H

#include <stdbool.h>

#include "err.h"
#include "kind.h"

/* squashfs.c: unsquashfs of a squashfs that starts `offset` bytes into `path`
 * (0 for a .sqsh; the partition offset for a SIF). */
int squashfs_unpack(const char *path, unsigned long long offset, unsigned long long size,
		    const char *dest, bool progress, struct err *e);
/* squashfs.c: the compressor id of the squashfs at offset (1 gzip, 4 xz,
 * 5 lz4, 6 zstd: squashfs's numbers), -1 with e. */
int squashfs_compressor(const char *path, unsigned long long offset, struct err *e);
/* squashfs.c: the squashfs superblock at offset is version 4 and fits in
 * size bytes (0 = whatever follows); *used (unless NULL) gets its bytes_used. */
int squashfs_check(const char *path, unsigned long long offset, unsigned long long size,
		   unsigned long long *used, struct err *e);
/* squashfs.c: the bytes a reader of a squashfs of bytes_used needs: rounded
 * up to 4 KiB (what the kernel reads), at most avail (what its region has).
 * Pure. */
unsigned long long squashfs_window(unsigned long long bytes_used, unsigned long long avail);
/* squashfs.c: where the root squashfs of a .sqsh or a SIF (its primary
 * partition) lies, checked as above: *offset its first byte, *size the
 * squashfs_window of it within the partition (a SIF) or the file (a .sqsh),
 * so that a mount of offset..offset+size reads nothing else. */
int squashfs_region(const char *path, enum image_kind kind, unsigned long long *offset,
		    unsigned long long *size, struct err *e);
/* squashfs.c: the SIF's primary partition, checked to be a squashfs within its bounds. */
int sif_unpack(const char *path, const char *dest, bool progress, struct err *e);

/* archive.c: IMAGE_DOCKER_ARCHIVE, IMAGE_OCI_ARCHIVE or IMAGE_UNKNOWN for a
 * file that libarchive reads as a tar (possibly compressed). -1 only on I/O errors or when
 * libarchive cannot be loaded (archive_dl.h). */
int archive_detect(const char *path, enum image_kind *kind, struct err *e);
/* max: the bound on the decompressed archive and on the bytes its layers
 * write ([cache] max_unpacked; 0 = none). */
int archive_unpack(const char *path, enum image_kind kind, const char *dest, bool progress,
		   unsigned long long max, struct err *e);

/* sanitize.c: removes device nodes and clears setuid/setgid bits in the
 * unpacked tree at root, never following a link (every unpack ends so). */
int image_sanitize(const char *root, struct err *e);
/* sanitize.c: the same, and every inode given to root (uid and gid 0): a
 * shared cache's entry, which every user runs, so that no host user who
 * happens to own the image's /home/ubuntu can change it (root only). */
int image_sanitize_shared(const char *root, struct err *e);
/* sanitize.c: changes nothing; -1 naming the first inode that a shared
 * entry may not hold (not root's, writable by others, setuid, special). */
int image_check_shared(const char *root, struct err *e);

#endif
