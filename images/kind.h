/* kind.h - the image formats ctrun knows, the one type that image.c and the
 * per-format unpackers (unpack.h) share. */
#ifndef CTRUN_KIND_H
#define CTRUN_KIND_H

enum image_kind {
	IMAGE_UNKNOWN,
	IMAGE_SQUASHFS,
	IMAGE_SIF,
	IMAGE_DOCKER_ARCHIVE,
	IMAGE_OCI_ARCHIVE,
	IMAGE_DIR,
	/* The number of kinds: a kind is added above it, and every table
	 * indexed by kind (the drivers' ranks, rt/drivers.h) grows with it. */
	IMAGE_KINDS
};

#endif
