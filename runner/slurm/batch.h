/* batch.h - called from a batch script or salloc shell: re-launch on every node. */
#ifndef CTRUN_BATCH_H
#define CTRUN_BATCH_H

#include "err.h"
#include "options.h"
#include "topology.h"

/* The srun argv that runs this same ctrun once per node of the job. */
int batch_srun_argv(const struct options *o, const struct topo *t, char *const *envp,
		    const char *self, struct strv *argv, struct err *e);

/* Runs that step (again, up to --max-restarts times) and returns its status. */
int batch_run(const struct options *o, const struct topo *t, char *const *envp, struct err *e);

#endif
