/* step.h - acting on this job's Slurm steps from inside the job, with
 * Slurm's own commands (scancel, squeue), each given at most 5 s. */
#ifndef CTRUN_STEP_H
#define CTRUN_STEP_H

#include "strv.h"
#include "topology.h"

/* scancel --signal=SIG JOB.STEP: the step's tasks get sig.  0 when
 * scancel said so, -1 otherwise. */
int step_signal(const char *job_id, const char *step_id, int sig);

/* The numbered steps of a job that Slurm lists as running ("0", "3"; not
 * the batch or extern step), appended to out.  -1 when squeue failed. */
int job_steps(const char *job_id, struct strv *out);

/* Fail-fast across nodes: cancels this Slurm step (t->job_id.t->step_id)
 * with SIGURG. */
void step_cancel(const struct topo *t);

/* step_cancel for a supervisor's on_first_failure callback (arg: the topo). */
void step_cancel_cb(void *topo);

#endif
