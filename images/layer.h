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

/* Reads every member of `in` (an opened libarchive reader) into directory
 * `root`.  `what` names the layer in errors ("layer 2"). */
int layer_apply(struct archive *in, const char *root, const char *what, struct err *e);

#endif
