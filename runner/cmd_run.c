/* cmd_run.c - `ctrun [OPTIONS] COMMAND` and `ctrun env`: work out the
 * topology, re-launch through srun from a batch script, else start this
 * node's workers (here, or with --image inside a container). */
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "commands.h"
#include "container.h"
#include "launch.h"
#include "nodehealth.h"
#include "watchclient.h"
#include "phase.h"
#include "topology.h"
#include "tsummary.h"

extern char **environ;

/* `ctrun env --image IMG [COMMAND]`: each local worker's whole environment
 * inside the container, as the agent builds it (agentspec_worker_env), by
 * the agent itself in the container (its print mode). */
static int print_container_env(const struct options *o, struct topo *t, struct err *e)
{
	struct ctr_setup c;
	int rv = -1;

	if (launch_prepare(t, e) < 0 || ctr_setup_init(&c, o, t, environ, true, e) < 0)
		return -1;
	if (o->command.n > 0 ? strv_extend(&c.spec.argv, o->command.v) < 0
			     : strv_push(&c.spec.argv, "true") < 0)
		err_sys(e, EXIT_CTRUN, "ctrun env");
	else
		rv = ctr_run_exec(&c, o, t, environ, true, e);
	ctr_setup_free(&c);
	if (rv > 0)
		return err_set(e, rv, "ctrun env: the agent in the container on %s exited with "
			       "status %d", t->host, rv);
	return rv;
}

int cmd_run(struct options *o, struct err *e)
{
	struct topo t;
	int rv = -1, tfd = -1;

	/* `ctrun --image IMG` with nothing to run: a shell in it. */
	if (options_cmd_is(o, "run") && o->image != NULL && o->command.n == 0)
		return cmd_shell(o, e);
	if (launch_topology(o, &t, e) < 0)
		goto out;
	phase_mark("topology");
	/* As srun without -l and docker run: one worker's lines as they are. */
	if (o->prefix_mode == NULL || strcmp(o->prefix_mode, "auto") == 0)
		o->prefix = t.world_size > 1;
	else
		o->prefix = strcmp(o->prefix_mode, "true") == 0;
	if (t.mode == MODE_BATCH) {
		if (options_cmd_is(o, "run") && o->command.n == 0) {
			err_set(e, EXIT_USAGE, "no command given (see ctrun --help)");
			goto out;
		}
		rv = batch_run(o, &t, environ, e);
		/* The batch script's own line: staging's time is here. */
		if (o->timings || o->verbose > 0) {
			char label[128];

			phase_mark("steps");
			snprintf(label, sizeof(label), "%.63s (batch script)", t.host);
			phase_report(stderr, label);
		}
		goto out;
	}
	if (options_cmd_is(o, "env") && o->image != NULL) {
		rv = print_container_env(o, &t, e) < 0 ? -1 : 0;
		goto out;
	}
	if (options_cmd_is(o, "env")) {
		if (launch_prepare(&t, e) < 0 || launch_print_env(o, &t, environ, e) < 0)
			goto out;
		rv = 0;
		goto out;
	}
	if (o->timings || o->verbose > 0)
		tfd = tsum_listen(&t, (int)o->verbose);
	/* A node of a batch-mode step: the batch ctrun's watch hears from it
	 * until its last word, whatever the outcome (watchclient.h). */
	if (options_cmd_is(o, "run"))
		watchc_open(t.host, t.job_id, environ, o->quiet);
	rv = container_run_workers(o, &t, environ, e);
	watchc_done(rv >= 0 ? rv : e->code != 0 ? e->code : EXIT_CTRUN);
	if (o->timings || o->verbose > 0) {
		phase_report(stderr, t.host);
		/* The others' reports come as they end: wait a little for them,
		 * not at all after a failure. */
		tsum_finish(tfd, &t, rv == 0 ? 2000 : 0, stderr);
	}
out:
	topo_free(&t);
	return rv;
}

int cmd_health(struct options *o, struct err *e)
{
	struct topo t;
	int rv = -1;

	/* The check's step has every candidate node: no count of the run's applies. */
	o->nnodes = o->node_rank = -1;
	if (launch_topology(o, &t, e) == 0)
		rv = t.step_id != NULL ? nodehealth_main(o, &t, environ)
				       : err_set(e, EXIT_CTRUN, "the health check runs in a step");
	topo_free(&t);
	return rv;
}
