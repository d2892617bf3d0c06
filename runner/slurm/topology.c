/* topology.c - launch mode and rank arithmetic from Slurm's variables. */
#include "topology.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "hostlist.h"
#include "tasks.h"
#include "strv.h"
#include "util.h"

/* First variable of the list that is set and not empty. */
static const char *env_first(char *const *envp, const char *a, const char *b, const char *c)
{
	const char *keys[] = { a, b, c };

	for (size_t i = 0; i < 3; i++) {
		const char *v = keys[i] != NULL ? envp_get(envp, keys[i]) : NULL;

		if (v != NULL && *v != '\0')
			return v;
	}
	return NULL;
}

static int env_long(char *const *envp, const char *key, long min, long *out, struct err *e)
{
	const char *v = envp_get(envp, key);

	if (v == NULL || *v == '\0')
		return 0;
	if (parse_long(v, min, 1L << 40, out) < 0)
		return err_set(e, EXIT_CTRUN, "%s='%s' is not a number >= %ld", key, v, min);
	return 1;
}

bool topo_special_step(const char *id)
{
	long v;

	/* slurm.h: SLURM_PENDING_STEP 0xfffffffd, SLURM_EXTERN_CONT 0xfffffffc,
	 * SLURM_BATCH_SCRIPT 0xfffffffb, SLURM_INTERACTIVE_STEP 0xfffffffa, ...;
	 * printed with %d (-3 .. -6) in the task's environment, with %u
	 * (4294967293 ..) elsewhere.  Everything from 0xfffffff0 up is reserved. */
	if (parse_long(id, LONG_MIN, LONG_MAX, &v) < 0)
		return false;
	return v < 0 ? v >= -16 : v >= 0xfffffff0L && v <= 0xffffffffL;
}

long topo_derive_port(unsigned long job_id, unsigned long step_id)
{
	/* 16 steps per job before ports repeat, 1375 consecutive jobs apart;
	 * [10000, 32000) stays below Linux's ephemeral range (32768+). */
	return 10000 + (long)((job_id * 16 + step_id % 16) % 22000);
}

static int nproc_for(const struct options *o, const struct topo *t, struct err *e)
{
	const char *n = o->nproc_per_node != NULL ? o->nproc_per_node : "auto";
	long v;

	if (strcmp(n, "auto") == 0)
		return t->gpus.n > 0 ? (int)t->gpus.n : 1;
	if (strcmp(n, "gpu") == 0) {
		if (t->gpus.n == 0)
			return err_set(e, EXIT_CTRUN,
				       "--nproc-per-node gpu: no GPU on host %s (no CUDA_VISIBLE_DEVICES, "
				       "SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE or /dev/nvidiaN)", t->host);
		return (int)t->gpus.n;
	}
	if (parse_long(n, 1, 4096, &v) < 0)
		return err_set(e, EXIT_USAGE, "--nproc-per-node '%s' is not auto, gpu or a number", n);
	return (int)v;
}

static int detect_standalone(const struct options *o, struct topo *t, struct err *e)
{
	int nproc = nproc_for(o, t, e);

	if (nproc < 0)
		return -1;
	if (o->nnodes_min != o->nnodes_max)
		return err_set(e, EXIT_USAGE, "--nnodes %ld:%ld: an elastic node count needs a batch "
			       "script, whose ctrun restarts the step on the nodes left; outside "
			       "Slurm give --nnodes N", o->nnodes_min, o->nnodes_max);
	t->nnodes = o->nnodes > 0 ? o->nnodes : 1;
	t->node_rank = o->node_rank >= 0 ? o->node_rank : 0;
	if (t->node_rank >= t->nnodes)
		return err_set(e, EXIT_USAGE, "--node-rank %ld is not below --nnodes %ld",
			       t->node_rank, t->nnodes);
	if (t->nnodes > 1 && o->master_addr == NULL)
		return err_set(e, EXIT_USAGE, "--nnodes %ld outside Slurm needs --master-addr",
			       t->nnodes);
	t->nproc = t->local_world_size = nproc;
	t->rank_base = t->node_rank * nproc;
	t->world_size = t->nnodes * nproc;
	t->ntasks_on_node = 1;
	t->master_addr = strdup(o->master_addr != NULL ? o->master_addr : "127.0.0.1");
	t->master_port = o->master_port > 0 ? o->master_port : (t->nnodes > 1 ? 29500 : 0);
	return 0;
}

/* The batch ctrun's node order for its step (TOPO_BATCH_NODES_ENV): the
 * same nodes as the step's list, node rank 0 first.  Slurm lists a step's
 * nodes in the job's order whatever srun -w says, and a spare that takes a
 * lost node's place takes its rank.  The tasks per node follow. */
static int batch_order(const char *order, struct topo *t, long *counts, struct err *e)
{
	struct strv v = { 0 };
	long *was = NULL;
	size_t n = t->nodes.n;
	int rv = -1;

	for (const char *p = order;; p++) {
		size_t len = strcspn(p, ",");

		if (strv_pushn(&v, p, len) < 0)
			goto sys;
		p += len;
		if (*p == '\0')
			break;
	}
	if ((was = calloc(n, sizeof(*was))) == NULL)
		goto sys;
	if (v.n != n)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		long at = strv_find(&t->nodes, v.v[i]);

		if (at < 0 || strv_find(&v, v.v[i]) != (long)i)
			goto bad;
		was[i] = counts[at];
	}
	memcpy(counts, was, n * sizeof(*counts));
	strv_free(&t->nodes);
	t->nodes = v;
	v = (struct strv){ 0 };
	rv = 0;
	goto out;
sys:
	err_sys(e, EXIT_CTRUN, "topology");
	goto out;
bad:
	err_set(e, EXIT_CTRUN, "%s='%.200s' is not an order of the step's nodes",
		TOPO_BATCH_NODES_ENV, order);
out:
	strv_free(&v);
	free(was);
	return rv;
}

/* What a Slurm step's environment says. */
struct step {
	const char *nodelist;
	long *counts;  /* the tasks on each of t->nodes */
	size_t ncounts;
	long procid, localid, nodeid, ntasks, step;
};

/* The step's nodes (in the batch ctrun's order when it gave one: step
 * order), their tasks, this task's ids. */
static int step_read(char *const *envp, struct topo *t, struct step *st, struct err *e)
{
	const char *tpn, *order;

	st->nodelist = env_first(envp, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
				 "SLURM_NODELIST");
	tpn = env_first(envp, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL);
	if (st->nodelist == NULL || tpn == NULL)
		return err_set(e, EXIT_CTRUN, "inside Slurm step %s.%s but SLURM_STEP_NODELIST or "
			       "SLURM_STEP_TASKS_PER_NODE is not set", t->job_id, t->step_id);
	if (hostlist_expand_any(st->nodelist, &t->nodes, e) < 0 ||
	    tasks_per_node_parse(tpn, &st->counts, &st->ncounts, e) < 0)
		return -1;
	if (st->ncounts != t->nodes.n)
		return err_set(e, EXIT_CTRUN, "SLURM_STEP_TASKS_PER_NODE '%s' gives %zu nodes but the "
			       "nodelist '%s' has %zu", tpn, st->ncounts, st->nodelist, t->nodes.n);
	order = envp_get(envp, TOPO_BATCH_NODES_ENV);
	if (order != NULL && *order != '\0' && batch_order(order, t, st->counts, e) < 0)
		return -1;
	if (env_long(envp, "SLURM_PROCID", 0, &st->procid, e) < 0 ||
	    env_long(envp, "SLURM_LOCALID", 0, &st->localid, e) < 0 ||
	    env_long(envp, "SLURM_NODEID", 0, &st->nodeid, e) < 0)
		return -1;
	if (parse_long(t->step_id, 0, 1L << 40, &st->step) < 0)
		return err_set(e, EXIT_CTRUN, "SLURM_STEP_ID='%s' is not a step number", t->step_id);
	if (env_long(envp, "SLURM_STEP_NUM_TASKS", 1, &st->ntasks, e) == 0 &&
	    env_long(envp, "SLURM_NTASKS", 1, &st->ntasks, e) == 0)
		for (size_t i = 0; i < st->ncounts; i++)
			st->ntasks += st->counts[i];
	return st->ntasks <= 0 ? -1 : 0;
}

/* This node's place: its rank, the node count, its tasks. */
static int step_place(const struct options *o, struct topo *t, const struct step *st,
		      struct err *e)
{
	/* NODE_RANK: our place in the step's nodelist; SLURM_NODEID if the
	 * name is not there (a node whose hostname differs from NodeName). */
	t->node_rank = strv_find(&t->nodes, t->host);
	if (t->node_rank < 0)
		t->node_rank = st->nodeid;
	if (t->node_rank < 0 || (size_t)t->node_rank >= t->nodes.n)
		return err_set(e, EXIT_CTRUN, "host '%s' is not in the step's nodelist '%s' and "
			       "SLURM_NODEID is not set", t->host, st->nodelist);
	if (o->node_rank >= 0)
		t->node_rank = o->node_rank;
	t->nnodes = o->nnodes > 0 ? o->nnodes : (long)t->nodes.n;
	if (t->node_rank >= t->nnodes)
		return err_set(e, EXIT_USAGE, "node rank %ld is not below the node count %ld",
			       t->node_rank, t->nnodes);
	t->ntasks_on_node = (size_t)t->node_rank < st->ncounts ? st->counts[t->node_rank] : 1;
	return 0;
}

/* The workers' ranks by mode.  One mode for every node of the step, or
 * the ranks would not add up: any node with several tasks makes it task
 * mode everywhere. */
static int step_mode(const struct options *o, struct topo *t, const struct step *st,
		     struct err *e)
{
	t->mode = o->mode;
	if (t->mode == MODE_AUTO)
		t->mode = st->ntasks > (long)st->ncounts ? MODE_TASK : MODE_NODE;
	if (t->mode == MODE_NODE) {
		int nproc;

		if (t->ntasks_on_node != 1)
			return err_set(e, EXIT_USAGE, "node mode needs one Slurm task per node but "
				       "this step has %ld on %s (use --mode task, or srun "
				       "--ntasks-per-node=1)", t->ntasks_on_node, t->host);
		nproc = nproc_for(o, t, e);
		if (nproc < 0)
			return -1;
		t->nproc = t->local_world_size = nproc;
		t->rank_base = t->node_rank * nproc;
		t->local_rank_base = 0;
		t->world_size = t->nnodes * nproc;
	} else if (t->mode == MODE_TASK) {
		long base = 0;

		for (long i = 0; i < t->node_rank && (size_t)i < st->ncounts; i++)
			base += st->counts[i];
		t->nproc = 1;
		t->local_world_size = t->ntasks_on_node;
		t->local_rank_base = st->localid;
		/* SLURM_PROCID is the rank (it equals base + SLURM_LOCALID under
		 * the default block distribution, and stays right under cyclic). */
		t->rank_base = st->procid >= 0 ? st->procid : base + st->localid;
		t->world_size = st->ntasks;
	} else {
		return err_set(e, EXIT_USAGE, "--mode %s inside Slurm step %s.%s", mode_name(t->mode),
			       t->job_id, t->step_id);
	}
	return 0;
}

/* Inside a Slurm step (node or task mode). */
static int detect_step(const struct options *o, char *const *envp, struct topo *t,
		       struct err *e)
{
	struct step st = { .procid = -1, .nodeid = -1 };
	int rv = -1;

	if (step_read(envp, t, &st, e) == 0 && step_place(o, t, &st, e) == 0 &&
	    step_mode(o, t, &st, e) == 0) {
		t->master_addr = strdup(o->master_addr != NULL ? o->master_addr : t->nodes.v[0]);
		t->master_port = o->master_port > 0 ? o->master_port
			: topo_derive_port(strtoul(t->job_id, NULL, 10), (unsigned long)st.step);
		rv = 0;
	}
	free(st.counts);
	return rv;
}

/* In a batch script or salloc shell: ctrun will re-launch itself with srun. */
static int detect_batch(const struct options *o, char *const *envp, struct topo *t,
			struct err *e)
{
	const char *nodelist = env_first(envp, "SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL);

	if (nodelist == NULL)
		return err_set(e, EXIT_CTRUN, "in Slurm job %s but SLURM_JOB_NODELIST is not set",
			       t->job_id);
	if (hostlist_expand_any(nodelist, &t->nodes, e) < 0)
		return -1;
	t->mode = MODE_BATCH;
	t->nnodes = o->nnodes > 0 ? o->nnodes : (long)t->nodes.n;
	t->node_rank = 0;
	t->nproc = 0; /* decided on each node */
	t->master_addr = strdup(o->master_addr != NULL ? o->master_addr : t->nodes.v[0]);
	return 0;
}

int topo_detect(const struct options *o, char *const *envp, const char *hostname,
		long ndevfiles, struct topo *t, struct err *e)
{
	const char *job = envp_get(envp, "SLURM_JOB_ID");
	const char *step = envp_get(envp, "SLURM_STEP_ID");
	const char *node = envp_get(envp, "SLURMD_NODENAME");
	int ret;

	memset(t, 0, sizeof(*t));
	if (job == NULL || *job == '\0')
		job = envp_get(envp, "SLURM_JOBID");
	t->host = strdup(node != NULL && *node != '\0' ? node : hostname);
	t->job_id = strdup(job != NULL && *job != '\0' ? job : "none");
	if (step == NULL || *step == '\0')
		step = envp_get(envp, "SLURM_STEPID");
	/* Slurm's special steps (the batch script's since 26.05, salloc's
	 * interactive step, the extern step) are no step to run workers in:
	 * from there ctrun launches its own, as from an sbatch script. */
	if (step != NULL && *step != '\0' && !topo_special_step(step))
		t->step_id = strdup(step);
	if (t->host == NULL || t->job_id == NULL || (t->step_id == NULL && step != NULL && *step &&
						     !topo_special_step(step)))
		return err_sys(e, EXIT_CTRUN, "topology");
	/* Inside a job, the GPUs are what Slurm allocated: a node's device
	 * files exist whether or not this job may use them. */
	if (gpu_ids_from_env(envp, job != NULL && *job != '\0' ? 0 : ndevfiles, &t->gpus, e) < 0)
		return -1;

	if (o->mode == MODE_STANDALONE || job == NULL || *job == '\0') {
		t->mode = MODE_STANDALONE;
		ret = detect_standalone(o, t, e);
	} else if (t->step_id == NULL) {
		ret = detect_batch(o, envp, t, e);
	} else {
		ret = detect_step(o, envp, t, e);
	}
	if (ret == 0 && t->master_addr == NULL)
		return err_sys(e, EXIT_CTRUN, "topology");
	return ret;
}

void topo_free(struct topo *t)
{
	free(t->master_addr);
	free(t->host);
	free(t->job_id);
	free(t->step_id);
	strv_free(&t->nodes);
	strv_free(&t->gpus);
	memset(t, 0, sizeof(*t));
}
