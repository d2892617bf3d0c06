/* step.h - acting on this job's Slurm step from inside it. */
#ifndef CTRUN_STEP_H
#define CTRUN_STEP_H

#include "topology.h"

/* Fail-fast across nodes: cancels this Slurm step (t->job_id.t->step_id)
 * with SIGURG, waiting at most 5 s for scancel. */
void step_cancel(const struct topo *t);

/* step_cancel for a supervisor's on_first_failure callback (arg: the topo). */
void step_cancel_cb(void *topo);

#endif
