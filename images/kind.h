/* kind.h - the image formats ctrun knows, the one type that image.c and the
 * per-format unpackers (unpack.h) share. */
#ifndef CTRUN_KIND_H
#define CTRUN_KIND_H

enum image_kind { IMAGE_UNKNOWN, IMAGE_SQUASHFS, IMAGE_SIF, IMAGE_DOCKER_ARCHIVE, IMAGE_OCI_ARCHIVE, IMAGE_DIR };

#endif
