/* imgsource.h - the acting part of the root file system decision
 * (ctrroot.h): gathering its facts on this host, then mounting, unpacking
 * or creating what it chose (imgsource.c). */
#ifndef CTRUN_IMGSOURCE_H
#define CTRUN_IMGSOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "cache/cache.h"
#include "ctrroot.h"
#include "err.h"
#include "options.h"

struct ctr_root_req {
	const char *image;       /* absolute path */
	enum image_kind kind;
	enum ctr_root_need need;
	const char *rundir;      /* the holder mounts on RUNDIR/image */
	bool *rundir_made;       /* made already; set when made here for the holder */
	const char *share;       /* task mode: the node's shared holder (holder_share), "" = own */
	bool root;
	const struct ctr_ask *ask; /* --image-mode, --dry-run, -v, -q, [cache], the environment */
};

/* Decides (ctr_root_decide) and makes the root file system into r: with
 * --dry-run nothing is created.  -1 with e; r is then for ctr_root_free. */
int ctr_root_prepare(const struct ctr_root_req *q, struct ctr_root *r, struct err *e);

/* The node cache's settings from the [cache] options: dir ([cache] dir,
 * CTRUN_CACHE_DIR, else the default) stored in dirbuf; progress "auto" =
 * stderr is a tty and not -q; quiet from -q. */
int ctr_cache_cfg(const struct options *o, struct cache_cfg *c, char *dirbuf, size_t size,
		  struct err *e);

#endif
