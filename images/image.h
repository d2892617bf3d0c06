/* image.h - container image formats: detection from the bytes, unpacking to a directory.
 *
 * The kinds --image accepts: an enroot squashfs, a SIF file, a `docker save`
 * tar, an OCI image-layout tar, or a rootfs directory.  The file name is never
 * trusted: a .sqsh renamed .tar is still a squashfs.
 *
 * Folder images/: image formats (detection, this file; the kinds, kind.h),
 * an image's config and environment (imgconfig.h), the progress meter, and
 * three parts, one library (their headers included as "cache/cache.h"):
 *   cache/   the node cache (cache.h) and named containers (named.h);
 *   unpack/  unpacking to a tree (unpack.h: the SIF reader, squashfs,
 *            docker/OCI archives and their layers, the sanitizing walk) or
 *            mounting a squashfs where it lies (imgmount.h);
 *   squash/  the squashfs writer: layers streamed into a tree in memory
 *            (mtree.h, mlayer.h, layerfile.h) and written (sqimage.h).
 * May use: core/ (the GNUmakefile's include paths enforce it).
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
