/* agentwatch.h - a container run, watched (run.c starts it): the agent's
 * events turned into Slurm's fail-fast, the runtime's signals, SIGURG to
 * the agent as a message, and the workers' progress for --hang-timeout.
 * Private to runner/container/. */
#ifndef CTRUN_AGENTWATCH_H
#define CTRUN_AGENTWATCH_H

#include "container.h"
#include "options.h"
#include "rt.h"
#include "strv.h"
#include "supervise.h"
#include "topology.h"

/* One round of this node's workers, as launch_local asks for it. */
struct ctr_round {
	const struct options *o;
	const struct topo *t;
	char *const *envp;
	const struct strv *argv;
	long restart;
};

/* Starts the runtime of plan p and watches it until it ends: r filled, or
 * -1 with e when it failed before the container started. */
int ctr_watch(const struct ctr_setup *c, const struct ctr_plan *p, const struct ctr_round *rd,
	      struct supervise_result *r, struct err *e);

#endif
