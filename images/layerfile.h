/* layerfile.h - an image given as separate files, as a registry pull
 * downloads it: its layers (tar, gzip or zstd tar blobs, bottom first) and
 * its config JSON.  Applied into a directory with the same rules as a
 * docker archive's layers (layer.c: OCI whiteouts, every path inside the
 * root) and config (imgconfig.c: Env, Entrypoint, Cmd, WorkingDir), then
 * made a squashfs (squashfs_make), so a pulled image is a .sqsh like any
 * other from then on. */
#ifndef CTRUN_LAYERFILE_H
#define CTRUN_LAYERFILE_H

#include "archive_filter.h"
#include "err.h"

/* The largest image config read (its size is checked before it is read). */
#define LAYERFILE_CONFIG_MAX (16u << 20)

/* Applies the layer file open at fd (read from offset 0; the idx-th, from
 * 0, named `what` in errors) onto dest, counting against l (NULL: no
 * bound). */
int layerfile_apply(int fd, size_t idx, const char *what, const char *dest,
		    struct unpack_limit *l, struct err *e);

/* The image config JSON open at fd (bounded: LAYERFILE_CONFIG_MAX, checked
 * before anything is read, and no more read) written into dest as a docker
 * archive's is. */
int layerfile_config(int fd, const char *dest, struct err *e);

/* mksquashfs of dir into the new file out (gzip level 1, every file root's as
 * enroot's import makes them, no xattrs); out must not exist. */
int squashfs_make(const char *dir, const char *out, struct err *e);

#endif
