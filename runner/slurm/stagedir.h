/* stagedir.h - the per-job private directory that staged images go into.
 *
 * The stage directory (/tmp by default) is shared with every user of the
 * node, and Slurm's file broadcast opens its target with O_TRUNC and
 * without O_NOFOLLOW: a name there that another user can guess could be a
 * symlink to a file of the job's user, or a file that makes the copy fail.
 * So the copy goes into STAGE_DIR/ctrun-stage.UID.JOBID.RANDOM, a
 * directory of the user's, mode 0700, made on every node (by an srun of
 * `ctrun __stage prepare`) before sbcast writes into it; a name that
 * exists and is not such a directory is refused, never written through.
 *
 * The uid and job id in the name let the directories of jobs that ended
 * without their clean-up step (cancelled, timed out, a node rebooted out of
 * the job) be found and removed: by the next staging on the node, by the
 * clean-up step, and by `ctrun cache gc`, for the caller's own only. */
#ifndef CTRUN_STAGEDIR_H
#define CTRUN_STAGEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define STAGEDIR_PREFIX "ctrun-stage."

/* A fresh name for job's directory of uid: ctrun-stage.UID.JOB.HEX, HEX 16
 * random hex digits.  -1 with e when job is not a job id or size is short. */
int stagedir_name(char *buf, size_t size, uid_t uid, const char *job, struct err *e);

/* Whether name is such a name; if so, its uid and job id (job gets the
 * digits, NUL-terminated).  Pure. */
bool stagedir_name_parse(const char *name, uid_t *uid, char *job, size_t jsize);

/* On a node, before the copy: removes the caller's directories of ended
 * jobs in dir, then makes dir/name (a name of the caller's) and checks it
 * is a directory of the caller's that no one else can enter.  dir itself
 * must be one where others cannot rename or remove that directory (the
 * caller's or root's; sticky if others may write to it).  -1 with e
 * (EXIT_CTRUN) naming what is wrong.
 *
 * *found: the directory was there already.  Its name is the job's, with
 * 64 random bits, made once per node by one task per node, and another
 * user cannot make a directory of the caller's (nor one this check
 * accepts): so it was made by this job on another node, which sees the
 * same dir.  The nodes share the stage directory. */
int stagedir_prepare(const char *dir, const char *name, bool *found, struct err *e);

/* Removes dir/name and the files in it if it is a directory of the
 * caller's (no one else's, never through a symlink); nothing when it is
 * missing or not the caller's.  -1 with e on a failed removal. */
int stagedir_remove(const char *dir, const char *name, struct err *e);

/* Removes the caller's directories in dir whose job Slurm says is over
 * (step.h user_live_jobs); *removed and *bytes say how many and how much.
 * Nothing is removed when Slurm cannot be asked.  -1 with e when dir cannot
 * be read or a removal failed. */
int stagedir_gc(const char *dir, size_t *removed, unsigned long long *bytes, struct err *e);

#endif
