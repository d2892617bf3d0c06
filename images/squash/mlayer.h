/* mlayer.h - an image layer (a tar stream) and an image config applied to
 * a streamed squashfs (sqimage.h): the rules of layer.c and imgconfig.c,
 * on the tree in memory instead of a directory.
 *
 * Every rule of layer.h holds as it does on disk, in the same order and
 * with the same messages where they can be the same: `.wh.NAME` deletes
 * NAME, `.wh..wh..opq` clears what lower layers put in its directory but
 * keeps what its own layer wrote there, a file replacing a directory (or
 * the reverse) removes the old one, hard links may point into lower
 * layers, a member or link target with a `..` is refused, every parent
 * path and link target is resolved inside the image (mtree_resolve: an
 * absolute symlink restarts at the image's root), device nodes are left
 * out, a name or link target of PATH_MAX bytes or more is refused, and
 * every member costs 512 bytes plus its name, its link target and its data
 * against the unpack_limit (unpack_limit_member).  One difference: the
 * holes of a sparse file count too (on disk they cost nothing; in the
 * squashfs they would be written).  What is not on disk: the tree in
 * memory, bounded by the unpack_limit's max_tree after each member; and its
 * cost in time, a few lookups a member whatever the layer holds (a hard
 * link carrying data rewrites its file once for all its names; an opaque
 * marker clears its directory once a layer). */
#ifndef CTRUN_MLAYER_H
#define CTRUN_MLAYER_H

#include "unpack/archive_dl.h"
#include "unpack/archive_filter.h"
#include "err.h"
#include "imgconfig.h"
#include "sqimage.h"

/* Applies every member of `in` (an opened libarchive reader) to s's tree,
 * its files' data into s.  `what` names the layer in errors. */
int mlayer_apply(struct archive *in, struct sqimage *s, const char *what, struct unpack_limit *l,
		 struct err *e);

/* imgconfig_apply on s's tree: /etc/environment and /etc/rc replaced by
 * the config's, the working directory made, each path resolved inside the
 * image. */
int mlayer_config(const struct imgconfig *c, struct sqimage *s, struct err *e);

#endif
