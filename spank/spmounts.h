/* spmounts.h - pyxis's --container-mounts syntax, SRC[:DST[:FLAGS]] with
 * FLAGS joined by '+', as ctrun's --mount values (SRC:DST[:OPTIONS],
 * '\' escaped), and the binds the plugin adds itself.  Pure. */
#ifndef CTRUN_SPMOUNTS_H
#define CTRUN_SPMOUNTS_H

#include <stdbool.h>

#include "err.h"
#include "strv.h"

/* One SRC[:DST[:FLAGS]] entry, as pyxis reads it (tmpfs:DST[:FLAGS] and
 * umount:DST too): its --mount value onto mounts (once), a bind's source
 * as given onto sources (checked on the node).  -1 with one line in e
 * naming --container-mounts (EXIT_USAGE). */
int sp_mounts_parse(const char *entry, struct strv *mounts, struct strv *sources, struct err *e);

/* "--mount" and PATH:PATH[:ro], escaped, onto argv.  -1 out of memory. */
int sp_mounts_bind(struct strv *argv, const char *path, bool ro);

#endif
