/* layer.h - applying one image layer (a tar stream) onto a root directory.
 *
 * OCI layer semantics: members are written in order over what lower layers
 * left; `.wh.NAME` deletes NAME of a lower layer, `.wh..wh..opq` in a directory
 * hides everything lower layers put there.  Every member path and hard-link
 * target is resolved inside the root (rootpath.h) and written with libarchive's
 * secure flags, so a hostile layer (`../x`, `/abs`, a symlink to /etc followed
 * by `etc-link/passwd`) cannot touch anything outside the root. */
#ifndef CTRUN_LAYER_H
#define CTRUN_LAYER_H

#include <archive.h>

#include "err.h"

struct unpack_limit; /* archive_filter.h */

/* Reads every member of `in` (an opened libarchive reader) into directory
 * `root`.  `what` names the layer in errors ("layer 2").  Every member
 * counts against l (NULL: no bound): a 512-byte tar block for its header,
 * the bytes of its name and link target, plus the data bytes written, so
 * that neither a few huge files, millions of empty ones nor long names or
 * targets pass it; a name or target of PATH_MAX bytes or more is refused
 * (unpack_limit_member). */
int layer_apply(struct archive *in, const char *root, const char *what, struct unpack_limit *l,
		struct err *e);

#endif
