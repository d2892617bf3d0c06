/* watchclient.h - a node's ctrun in a batch-mode step: its side of the
 * batch ctrun's watch (watch.h, watchproto.h).  It connects when the step
 * names the watch (WATCH_ENV), reports its workers' progress when the run
 * has a hang timeout, and says its last word (its exit status) when it
 * ends; a ctrun that dies says nothing, which is how the batch ctrun tells
 * a lost node.  One connection per process. */
#ifndef CTRUN_WATCHCLIENT_H
#define CTRUN_WATCHCLIENT_H

#include <stdbool.h>

/* Connects when envp names the watch (nothing otherwise): the attempt
 * (CTRUN_RESTART_COUNT), the step (SLURM_STEP_ID) and the job's secret
 * come from envp.  A watch that cannot be reached is no failure: one line
 * says so (not under quiet) and the run goes on unwatched. */
void watchc_open(const char *host, const char *job, char *const *envp, bool quiet);
/* Whether this process is connected. */
bool watchc_on(void);
/* Rank made no progress for ms, and made some since it started or not
 * (best effort: dropped when the socket is full). */
void watchc_progress(long rank, long long ms, bool started);
/* The last word: this ctrun ends with status (waits at most 2 s to send it). */
void watchc_done(int status);
/* Why the batch ctrun stopped the step, if it said so ("" if not). */
const char *watchc_stop_why(void);

#endif
