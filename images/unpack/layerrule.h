/* layerrule.h - what one member of an image layer does, decided once for
 * both writers of a layer: the tree on disk (layer.c) and the tree in
 * memory of a streamed squashfs (squash/mlayer.c).
 *
 * The OCI layer rules: `.wh.NAME` deletes NAME of a lower layer,
 * `.wh..wh..opq` clears its directory of what lower layers put there, a
 * member with a `..` that climbs out, or a hard link whose target does,
 * is refused, and every parent path and hard-link target is resolved
 * inside the image (chroot semantics: an absolute symlink restarts at the
 * image's root).  The root's own entry and device nodes are skipped (the
 * runtime provides /dev).  What a writer then does with the decision
 * (remove, clear, write over what is there) is its own: the rules of what
 * goes where are here only, so a whiteout or escape fix is made once.
 *
 * Pure: the resolving of a parent directory is the caller's back end (the
 * directory open at a descriptor, or the tree in memory), given as a
 * function; no I/O here, so the unit tests drive it from a table. */
#ifndef CTRUN_LAYERRULE_H
#define CTRUN_LAYERRULE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* One layer member as its archive names it. */
struct layer_member {
	const char *name;     /* its path in the layer (never NULL) */
	mode_t type;          /* S_IFMT bits: S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR... */
	const char *hardlink; /* a hard link's target path; NULL for anything else */
};

enum layer_action {
	LAYER_SKIP,     /* nothing: the root's own entry, a device node */
	LAYER_OPAQUE,   /* clear the directory `path` of what lower layers put there */
	LAYER_WHITEOUT, /* remove `path` (it may not exist) */
	LAYER_PUT,      /* the member at `path` (over what is there) */
	LAYER_LINK,     /* a hard link at `path` to the resolved `link` */
};

struct layer_decision {
	enum layer_action action;
	char path[PATH_MAX]; /* resolved, relative to the root ("." is the root) */
	char link[PATH_MAX]; /* LAYER_LINK: the target, resolved */
	const char *base;    /* PUT, LINK: path's last component (in path) */
};

/* The parent directory `dir` (a cleaned path relative to the root, never
 * ".") resolved inside the root, its last component followed: 0, or -1
 * with errno. */
typedef int (*layer_resolve_fn)(void *arg, const char *dir, char *out, size_t size);

/* Decides what m does.  `what` names the layer in errors ("layer 2").
 * With name_max, a last component over NAME_MAX bytes is refused here (a
 * tree in memory has no kernel to refuse it when it is written).  0 with
 * d filled, or -1 with e (code EXIT_CTRUN): a member or hard link that
 * leaves the image, a bad whiteout, a path too long, a failed resolve. */
int layer_decide(const struct layer_member *m, layer_resolve_fn resolve, void *arg,
		 bool name_max, const char *what, struct layer_decision *d, struct err *e);

#endif
