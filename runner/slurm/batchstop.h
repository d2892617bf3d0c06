/* batchstop.h - how the batch-mode ctrun learns that its step was stopped
 * from outside, so that it does not restart it.
 *
 * Slurm stops a job's steps by signalling their tasks (scancel
 * --signal=TERM JOB, preemption, a time limit): every node's ctrun gets
 * the signal, but the batch script, and with it the batch-mode ctrun,
 * often does not (sbatch --wrap, or scancel without --batch/--full).  All
 * the batch ctrun sees is srun's status (143, as a worker failure could
 * give), so the node ctrun that received such a signal leaves a note in a
 * directory the batch ctrun made, named in $CTRUN_BATCH_STOPS.  The batch
 * script runs on the job's first node, where Slurm also puts the step's
 * task 0, so that ctrun's note is always there; on a node where the path
 * is not the batch ctrun's directory nothing is written.  The note is
 * written when the signal arrives, before srun --kill-on-bad-exit can
 * kill that ctrun.  The job's state in Slurm is the second check
 * (step.h job_state): a job that is ending or gone is never restarted. */
#ifndef CTRUN_BATCHSTOP_H
#define CTRUN_BATCHSTOP_H

#include <stddef.h>

#include "err.h"

#define BATCHSTOP_ENV "CTRUN_BATCH_STOPS"

/* The batch ctrun's directory for the notes: a fresh $TMPDIR (else
 * /tmp)/ctrun-stops.XXXXXX, mode 0700.  -1 with e (EXIT_CTRUN). */
int batchstop_dir_make(char *out, size_t size, struct err *e);

/* On a node: notes that this ctrun received sig from outside, in the
 * directory $CTRUN_BATCH_STOPS names, when that is a directory of ours
 * that no one else can enter.  Best effort: nothing when it is not. */
void batchstop_note(int sig, const char *host);

/* batchstop_note for supervise_opts.on_stop_signal (arg: the topo). */
void batchstop_cb(void *topo, int sig);

/* The first note in dir: 1 with the host that wrote it and the signal's
 * name ("TERM"), 0 when there is none. */
int batchstop_read(const char *dir, char *host, size_t hsize, char *sig, size_t ssize);

/* Removes the notes in dir (a note that did not stop the job). */
void batchstop_clear(const char *dir);

/* Removes dir and the notes in it. */
void batchstop_remove(const char *dir);

#endif
