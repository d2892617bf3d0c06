/* guardian.h - a tiny process that kills the workers if ctrun itself dies.
 *
 * PR_SET_PDEATHSIG only reaches a worker, not what the worker started, and
 * nothing runs in ctrun after a SIGKILL.  So before any worker exists ctrun
 * forks a guardian joined to it by a pipe, tells it each worker's process
 * group, and says goodbye on a clean exit; EOF without the goodbye means
 * ctrun died, and the guardian SIGKILLs every group it was told about. */
#ifndef CTRUN_GUARDIAN_H
#define CTRUN_GUARDIAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct guardian {
	pid_t pid; /* -1 when not running (never started, or reaped) */
	int fd;    /* write end of the pipe, -1 when closed */
};

/* Forks the guardian, able to remember up to max_groups groups.  The
 * guardian closes every inherited descriptor (stdio goes to /dev/null),
 * ignores the signals a terminal or Slurm sends to ctrun's process group,
 * and lives in a process group of its own.  When ctrun dies it kills the
 * groups, then execs on_death (argv, PATH lookup; NULL = none): node mode
 * cancels its Slurm step that way, so the other nodes stop too. */
int guardian_start(struct guardian *g, size_t max_groups, char *const *on_death, struct err *e);
/* Records a worker's process group; best effort (a dead guardian is no
 * reason to stop the job). */
void guardian_add(struct guardian *g, pid_t pgid);
/* The group is empty: the guardian forgets it, since its id may belong to
 * an unrelated process by the time ctrun dies. */
void guardian_forget(struct guardian *g, pid_t pgid);
/* True (and forgets the guardian) if `pid`, just reaped, was the guardian:
 * callers that wait for any child (waitpid(-1)) must not count it. */
bool guardian_reaped(struct guardian *g, pid_t pid);
/* Clean exit: tells the guardian to go without killing, and reaps it. */
void guardian_stop(struct guardian *g);

#endif
