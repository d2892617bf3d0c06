/* image.h - container image formats: detection from the bytes, unpacking to a directory.
 *
 * The kinds --image accepts: an enroot squashfs, a SIF file, a `docker save`
 * tar, an OCI image-layout tar, or a rootfs directory.  The file name is never
 * trusted: a .sqsh renamed .tar is still a squashfs.
 *
 * Folder images/: image formats (detection, the SIF reader, squashfs,
 * docker/OCI archives, directories), an image's config and environment, the
 * node cache.  May use: core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_IMAGE_H
#define CTRUN_IMAGE_H

#include <stdbool.h>

#include "err.h"
#include "kind.h"

/* "squashfs", "sif", "docker-archive", "oci-archive", "dir", "unknown". */
const char *image_kind_name(enum image_kind k);

/* Detects from the bytes (magic numbers), never the name. A directory is IMAGE_DIR.
 * An unreadable path or an unknown format fails with EXIT_CTRUN. */
int image_detect(const char *path, enum image_kind *kind, struct err *e);

/* Unpacks an image into an empty directory `dest` (squashfs: unsquashfs; SIF: the
 * primary system partition (a squashfs) located with our own SIF reader;
 * docker/OCI archive: layers applied in order with libarchive, .wh. whiteouts and
 * .wh..wh..opq opaque dirs, nothing ever written outside dest; dir: copied). */
int image_unpack(const char *path, enum image_kind kind, const char *dest, struct err *e);

/* Same, with progress on stderr when `progress` (the caller decides: a tty),
 * and `max` bytes at most unpacked ([cache] max_unpacked; 0 = no bound:
 * see unpack.h for what each format counts). */
int image_unpack_progress(const char *path, enum image_kind kind, const char *dest,
			  bool progress, unsigned long long max, struct err *e);

#endif
