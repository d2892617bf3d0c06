/* logfiles.h - the per-rank log files of --log-dir (rank-N.log), opened
 * in a directory that must be the caller's alone. */
#ifndef CTRUN_LOGFILES_H
#define CTRUN_LOGFILES_H

#include <stddef.h>

#include "err.h"
#include "supervise.h"

/* Opens dir/rank-N.log for each of w[0..n-1] into fds[i] (truncated, no
 * link followed, never blocking on what is not a regular file of ours).
 * fds[] must hold -1 on entry; on failure those opened so far stay in it
 * for the caller to close.  -1 with e (EXIT_CTRUN). */
int logfiles_open(const char *dir, const struct worker *w, size_t n, int *fds, struct err *e);

#endif
