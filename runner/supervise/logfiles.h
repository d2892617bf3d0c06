/* logfiles.h - the per-rank log files of --log-dir (rank-N.log), opened
 * in a directory that must be the caller's alone. */
#ifndef CTRUN_LOGFILES_H
#define CTRUN_LOGFILES_H

#include "err.h"

/* Opens dir, which must be ours and writable by no one else: its
 * descriptor, or -1 with e (EXIT_CTRUN). */
int logdir_open(const char *dir, struct err *e);

/* dir/rank-N.log in dfd (dir's descriptor), truncated, without following a
 * link or blocking on what is not a regular file of ours: its descriptor,
 * or -1 with e (EXIT_CTRUN). */
int logfile_open(int dfd, const char *dir, long rank, struct err *e);

#endif
