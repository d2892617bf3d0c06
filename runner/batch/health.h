/* health.h - the nodes' health check before each attempt of a batch-mode
 * run: one srun over the candidate nodes (--overlap: a step of a lost node
 * may linger until Slurm notices its node), in which each node's ctrun
 * checks what its next attempt needs (nodehealth.h) and prints one line.
 * A node that says it is unhealthy, or gives no answer within [run]
 * health_timeout (srun could not start there: a dead node's slurmd), is
 * left out like a lost one. */
#ifndef CTRUN_HEALTH_H
#define CTRUN_HEALTH_H

#include <stddef.h>

#include "err.h"
#include "options.h"
#include "strv.h"
#include "topology.h"

#define HEALTH_ENV "CTRUN_BATCH_HEALTH" /* set for the check's step: "1" */
#define HEALTH_TAG "ctrun-health:"      /* starts each node's line */

struct health {
	struct strv bad;  /* the unhealthy nodes */
	struct strv why;  /* why, for each */
	int stopped;      /* a stop signal the batch ctrun received meanwhile, 0 if none */
};

/* Checks nodes (self: this ctrun's path; env: the step's environment).
 * -1 with e only for ctrun's own failure. */
int health_run(const struct options *o, const struct topo *t, char *const *env,
	       const char *self, char *const *nodes, struct health *h, struct err *e);
void health_free(struct health *h);

/* A node's line "ctrun-health: HOST STEP ok" or "... HOST STEP bad: WHY":
 * 1 healthy, 0 unhealthy (why filled), -1 not such a line. */
int health_parse_line(const char *line, char *host, size_t hsize, long *step, char *why,
		      size_t wsize);
/* srun's "... failed on node HOST: WHY" (a launch that failed there): 0
 * with host and why, -1 for any other line. */
int health_srun_failure(const char *line, char *host, size_t hsize, char *why, size_t wsize);

#endif
