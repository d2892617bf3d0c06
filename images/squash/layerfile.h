/* layerfile.h - an image given as separate files, as a registry pull
 * downloads it: its layers (tar, gzip or zstd tar blobs, bottom first) and
 * its config JSON, streamed into one squashfs (sqimage.h) with the rules
 * of a docker archive's layers (mlayer.h: OCI whiteouts, every path inside
 * the root) and config (Env, Entrypoint, Cmd, WorkingDir), so a pulled
 * image is a .sqsh like any other, made without an unpacked tree. */
#ifndef CTRUN_LAYERFILE_H
#define CTRUN_LAYERFILE_H

#include "unpack/archive_filter.h"
#include "err.h"
#include "sqimage.h"

/* The largest image config read (its size is checked before it is read). */
#define LAYERFILE_CONFIG_MAX (16u << 20)

/* Applies the layer file open at fd (read from offset 0; the idx-th, from
 * 0, named `what` in errors) onto s, counting against l (NULL: no bound). */
int layerfile_apply(int fd, size_t idx, const char *what, struct sqimage *s,
		    struct unpack_limit *l, struct err *e);

/* A layer read through a callback, as it downloads: up to n bytes into buf,
 * 0 at its end, -1 with e (the download failed). */
struct layer_source {
	long long (*read)(void *arg, void *buf, size_t n, struct err *e);
	void *arg;
};

/* layerfile_apply of a layer that src gives, in order. */
int layerfile_apply_source(const struct layer_source *src, size_t idx, const char *what,
			   struct sqimage *s, struct unpack_limit *l, struct err *e);

/* The image config JSON open at fd (bounded: LAYERFILE_CONFIG_MAX, checked
 * before anything is read, and no more read) written into s as a docker
 * archive's is into its tree. */
int layerfile_config(int fd, struct sqimage *s, struct err *e);

#endif
