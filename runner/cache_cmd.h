/* cache_cmd.h - `ctrun cache`, and the node-cache settings every image user needs. */
#ifndef CTRUN_CACHE_CMD_H
#define CTRUN_CACHE_CMD_H

#include <stddef.h>

#include "cache.h"
#include "err.h"
#include "options.h"

/* Fills *c from the [cache] options: dir ([cache] dir, CTRUN_CACHE_DIR, else
 * /tmp/ctrun-cache-$UID) stored in dirbuf; progress "auto" = stderr is a tty;
 * quiet from -q. */
int cache_cfg_from_options(const struct options *o, struct cache_cfg *c, char *dirbuf,
			   size_t size, struct err *e);

#endif
