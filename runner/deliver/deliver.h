/* deliver.h - an image brought to this node before a command looks at it:
 * --image docker://REF (or HOST#REPO) made the path of the pulled image in
 * the store (resolve.c), from the registry or, in a job step on several
 * nodes with node-local stores, from the step's own nodes (the feed:
 * feed.h, feed_step.c, feed_wire.c, feed_serve.c).
 *
 * Folder runner/deliver/: image resolution and the in-job image feed.
 * May use: runner/net, runner/slurm, runner/config, runner/node,
 * registry/, images/, core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_DELIVER_H
#define CTRUN_DELIVER_H

#include <stddef.h>

#include "err.h"
#include "options.h"
#include "registry.h"

/* o->image made the store's image for a reference (phase "pull"); a path
 * that exists stays a path; no image: nothing to do. */
int image_resolve(struct options *o, struct err *e);
/* The same for one image: *path is the store's image (malloc'd) for a
 * reference, NULL for a path. */
int image_resolve_one(const struct options *o, const char *image, char **path, struct err *e);
/* The image store's directory ([registry] store or its default). */
int image_store_dir(const struct options *o, char *out, size_t size, struct err *e);
/* The registry client's settings from the options ([registry], [cache]
 * progress, -v, -q). */
void image_registry_cfg(const struct options *o, struct registry_cfg *c);

#endif
