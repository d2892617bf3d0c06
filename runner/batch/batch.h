/* batch.h - called from a batch script or salloc shell: re-launch on every node. */
#ifndef CTRUN_BATCH_H
#define CTRUN_BATCH_H

#include <stdbool.h>

#include "err.h"
#include "options.h"
#include "topology.h"

/* Where a step runs: NULL nodes, the first t->nnodes of the job (Slurm's
 * choice); else exactly those (srun --nodelist, in Slurm's order: the
 * node ranks are the batch ctrun's, topology.h TOPO_BATCH_NODES_ENV).
 * overlap: the step may share the nodes with a step that lingers. */
struct batch_on {
	char *const *nodes;
	bool overlap;
};

/* The srun argv that runs this same ctrun once per node of the step
 * (on: NULL, every node of the job, as Slurm picks). */
int batch_srun_argv(const struct options *o, const struct topo *t, char *const *envp,
		    const char *self, const struct batch_on *on, struct strv *argv, struct err *e);

/* Runs that step (again, up to --max-restarts times) and returns its status. */
int batch_run(const struct options *o, const struct topo *t, char *const *envp, struct err *e);

#endif
