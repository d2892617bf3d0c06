/* batch.c - `ctrun train.py` in an sbatch script: there is no step yet,
 * so ctrun re-launches itself with one task per node
 * (srun --ntasks-per-node=1 --kill-on-bad-exit=1), passes signals on to the
 * step (attempt.h) and restarts the whole step for --max-restarts, unless
 * it was told to stop, the step was stopped from outside (batchstop.h) or
 * the job is ending.  Each attempt runs on the nodes the node plan gives
 * (nodeplan.h: spares, elastic counts) after their health check
 * (health.h), and is watched (watch.h): a lost node or a hang stops it at
 * once, and the node is left out of the next. */
#include "batch.h"
#include "jobkey.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attempt.h"
#include "batchstop.h"
#include "health.h"
#include "nodeplan.h"
#include "phase.h"
#include "quote.h"
#include "stage.h"
#include "step.h"
#include "watch.h"
#include "strv.h"
#include "tasks.h"
#include "util.h"

int batch_srun_argv(const struct options *o, const struct topo *t, char *const *envp,
		    const char *self, const struct batch_on *on, struct strv *argv, struct err *e)
{
	long nnodes = t->nnodes;
	char *list = NULL;

	const char *cpn = envp_get(envp, "SLURM_JOB_CPUS_PER_NODE");
	long *counts = NULL, cpus = 0;
	size_t n = 0;
	int ret = 0;

	/* Give each node's ctrun every CPU the job has there (the fewest
	 * over the nodes), or Slurm hands the step one CPU per task. */
	if (cpn != NULL && *cpn != '\0') {
		if (tasks_per_node_parse(cpn, &counts, &n, e) < 0)
			return err_wrap(e, "SLURM_JOB_CPUS_PER_NODE");
		for (size_t i = 0; i < n; i++)
			if (cpus == 0 || counts[i] < cpus)
				cpus = counts[i];
		free(counts);
	}
	if (on != NULL && on->nodes != NULL) {
		for (nnodes = 0; on->nodes[nnodes] != NULL; nnodes++)
			;
		if ((list = nodeplan_list(on->nodes)) == NULL)
			return err_sys(e, EXIT_CTRUN, "srun argv");
	}
	ret |= strv_push(argv, "srun");
	/* A step of a lost node lingers in Slurm (with its CPUs and GPUs on
	 * the other nodes) until Slurm notices the node: the next step shares. */
	if (on != NULL && on->overlap)
		ret |= strv_push(argv, "--overlap");
	ret |= strv_pushf(argv, "--nodes=%ld", nnodes);
	ret |= strv_pushf(argv, "--ntasks=%ld", nnodes);
	ret |= strv_push(argv, "--ntasks-per-node=1");
	ret |= strv_push(argv, "--kill-on-bad-exit=1");
	if (list != NULL)
		ret |= strv_pushf(argv, "--nodelist=%s", list);
	free(list);
	if (cpus > 0)
		ret |= strv_pushf(argv, "--cpus-per-task=%ld", cpus);
	ret |= strv_push(argv, "--export=ALL");
	ret |= strv_push(argv, self);
	ret |= strv_extend(argv, o->args.v);
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "srun argv") : 0;
}

/* Staging's phases for the step's timings summary (tsummary.h), which
 * the first node's ctrun prints: "HOST;stage (prepare)=MS;...". */
static int set_stage_timings(const struct topo *t, struct strv *env)
{
	char buf[1024];
	int len = snprintf(buf, sizeof(buf), "%.63s;", t->host);

	if (len < 0 || (size_t)len >= sizeof(buf) ||
	    phase_encode(buf + len, sizeof(buf) - (size_t)len, "stage") <= 0)
		return 0; /* nothing staged: nothing to show */
	return strv_setenv(env, "CTRUN_BATCH_TIMINGS", buf, 1);
}

/* Whether a failed step must not start again because it was stopped from
 * outside (batchstop.h) or its job is ending or gone; if so, one line
 * says why.  After a node's ctrun ended without its last word (killed:
 * the out-of-memory killer), srun's --kill-on-bad-exit SIGTERMs the other
 * nodes, and can beat that ctrun's guardian's SIGURG to them: a note then
 * is that TERM's, and only the job's state says whether it ends. */
static bool stopped_from_outside(const struct options *o, const struct topo *t, const char *stops,
				 bool silent_end)
{
	char host[256], sig[32], state[64] = "";
	const char *why;

	if (silent_end)
		batchstop_clear(stops);
	else if (batchstop_read(stops, host, sizeof(host), sig, sizeof(sig)) == 1) {
		if (!o->quiet)
			fprintf(stderr, "ctrun: not restarting the step: ctrun on host %s received "
				"SIG%s from outside the job (scancel, preemption or a time limit)\n",
				host, sig);
		return true;
	}
	/* Only a running job can run a step: a cancelled, preempted or timed
	 * out one is COMPLETING first, then gone (srun: "job has expired"). */
	if (job_state(t->job_id, state, sizeof(state)) == 0 && strcmp(state, "RUNNING") == 0)
		return false;
	why = state[0] != '\0' ? state : NULL;
	if (!o->quiet) {
		if (why != NULL)
			fprintf(stderr, "ctrun: not restarting the step: Slurm lists job %s as %s\n",
				t->job_id, why);
		else
			fprintf(stderr, "ctrun: not restarting the step: Slurm no longer lists job "
				"%s (or squeue did not answer)\n", t->job_id);
	}
	return true;
}

/* The batch ctrun over its attempts. */
struct batch {
	const struct options *o;
	const struct topo *t;
	char self[PATH_MAX];
	struct strv env;
	struct nodeplan plan;
	struct watch watch;
	bool watched;        /* a watch over each attempt (a training run) */
	bool health;         /* a health check before each attempt */
	struct strv order;   /* this attempt's nodes, node rank 0 first */
	struct strv last;    /* the last attempt's */
	char stops[PATH_MAX];
	struct stage stage;
};

/* The job's secret for every node's ctrun (jobkey.h): the rendezvous of
 * check/bench, the --timings gather and the watch then need no key file
 * on a shared $HOME.  One the user set is kept. */
static int set_secret(struct strv *env, uint8_t secret[JOBKEY_LEN], struct err *e)
{
	const char *set = envp_get(env->v, JOBKEY_SECRET_ENV);
	char hex[JOBKEY_HEX_LEN + 1];
	int ret;

	if (set != NULL && jobkey_from_hex(set, secret) == 0)
		return 0;
	if (set != NULL)
		return err_set(e, EXIT_USAGE, "%s is not 64 hex digits", JOBKEY_SECRET_ENV);
	if (jobkey_random(secret, JOBKEY_LEN, e) < 0)
		return -1;
	jobkey_to_hex(secret, hex);
	ret = strv_setenv(env, JOBKEY_SECRET_ENV, hex, 1);
	explicit_bzero(hex, sizeof(hex));
	return ret < 0 ? err_sys(e, EXIT_CTRUN, "srun environment") : 0;
}

/* The step's environment (every attempt's), the stop notes' directory,
 * the staged image and the watch. */
static int batch_setup(struct batch *b, char *const *envp, struct err *e)
{
	uint8_t secret[JOBKEY_LEN];
	int rv;

	if (strv_extend(&b->env, envp) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	/* Ours to set per step: srun would otherwise read the job's
	 * per-task GPU request and give one task per node only that much. */
	strv_unsetenv(&b->env, "SLURM_GPUS_PER_TASK");
	strv_unsetenv(&b->env, "SLURM_NTASKS_PER_GPU");
	strv_unsetenv(&b->env, "SLURM_CPUS_PER_TASK");
	if (strv_setenv(&b->env, "CTRUN_BATCH_STEP", "1", 1) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	if (set_secret(&b->env, secret, e) < 0)
		return -1;
	rv = 0;
	if (b->watched) {
		char addr[64];

		rv = watch_reach_addr(b->t->host, b->t->nodes.v, addr, sizeof(addr), e);
		if (rv == 0)
			rv = watch_open(&b->watch, b->t->job_id, secret, addr, e);
	}
	explicit_bzero(secret, sizeof(secret));
	if (rv < 0)
		return -1;
	if (b->watched && (strv_setenv(&b->env, WATCH_ENV, b->watch.where, 1) < 0))
		return err_sys(e, EXIT_CTRUN, "srun environment");
	if (b->watched && b->o->verbose > 0)
		fprintf(stderr, "ctrun: batch mode: the watch over the step's nodes listens on %s\n",
			b->watch.where);
	if (batchstop_dir_make(b->stops, sizeof(b->stops), e) < 0) {
		b->stops[0] = '\0';
		return -1;
	}
	if (strv_setenv(&b->env, BATCHSTOP_ENV, b->stops, 1) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	/* The image to every node once, before the first step. */
	if (stage_image(b->o, b->t, &b->env, &b->stage, e) < 0)
		return -1;
	if ((b->o->timings || b->o->verbose > 0) && set_stage_timings(b->t, &b->env) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	return 0;
}

/* The usable nodes' health check; each unhealthy one is left out, in one
 * line.  *stopped: a stop signal that came meanwhile. */
static int check_health(struct batch *b, int *stopped, struct err *e)
{
	struct strv nodes = { 0 };
	struct health h;
	long long t0;
	int rv = -1;

	for (size_t i = 0; i < b->plan.nodes.n; i++)
		if (nodeplan_usable(&b->plan, i) && strv_push(&nodes, b->plan.nodes.v[i]) < 0) {
			err_sys(e, EXIT_CTRUN, "health check");
			goto out;
		}
	t0 = mono_ms();
	if (health_run(b->o, b->t, b->env.v, b->self, nodes.v, &h, e) < 0)
		goto out;
	if (b->o->verbose > 0)
		fprintf(stderr, "ctrun: batch mode: health check of %zu nodes: %zu unhealthy, %lld ms\n",
			nodes.n, h.bad.n, mono_ms() - t0);
	*stopped = h.stopped;
	for (size_t i = 0; i < h.bad.n; i++) {
		char why[600];

		snprintf(why, sizeof(why), "its health check failed: %s", h.why.v[i]);
		nodeplan_leave_out(&b->plan, h.bad.v[i], why);
		if (!b->o->quiet)
			fprintf(stderr, "ctrun: node %s left out: %s\n", h.bad.v[i], why);
	}
	health_free(&h);
	rv = 0;
out:
	strv_free(&nodes);
	return rv;
}

/* How this attempt's nodes differ from the last's, for the restart line:
 * " on a,b: b in c's place" or " on a: the world shrinks from 2 nodes to 1". */
static void describe_change(const struct strv *last, const struct strv *now, char *out,
			    size_t size)
{
	size_t len = 0;
	char *list = nodeplan_list(now->v);
	bool same = last->n == now->n;

	for (size_t i = 0; same && i < now->n; i++)
		same = strcmp(last->v[i], now->v[i]) == 0;
	out[0] = '\0';
	if (same || list == NULL) {
		free(list);
		return;
	}
	len = (size_t)snprintf(out, size, " on %s:", list);
	free(list);
	for (size_t i = 0; i < now->n && i < last->n && len < size; i++)
		if (strcmp(last->v[i], now->v[i]) != 0 && strv_find(last, now->v[i]) < 0)
			len += (size_t)snprintf(out + len, size - len, " %s in %s's place,", now->v[i],
						last->v[i]);
	if (now->n < last->n && len < size)
		len += (size_t)snprintf(out + len, size - len, " the world shrinks from %zu nodes "
					"to %zu,", last->n, now->n);
	if (len > 0 && len < size && out[len - 1] == ',')
		out[len - 1] = '\0';
}

/* One attempt on b->order; the nodes it lost are left out. */
static int run_attempt(struct batch *b, long restart, struct attempt_result *r, struct err *e)
{
	struct strv argv = { 0 };
	struct batch_on on = { .nodes = b->order.v, .overlap = restart > 0 };
	bool resilient = nodeplan_resilient(&b->plan);
	char count[32], *list = nodeplan_list(b->order.v);
	struct attempt a = { .t = b->t, .watch = b->watched ? &b->watch : NULL,
			     .grace_ms = b->o->kill_timeout * 1000 + 10000, .quiet = b->o->quiet };
	int rv = -1;

	snprintf(count, sizeof(count), "%ld", restart);
	if (list == NULL || strv_setenv(&b->env, "CTRUN_RESTART_COUNT", count, 1) < 0 ||
	    strv_setenv(&b->env, TOPO_BATCH_NODES_ENV, list, 1) < 0) {
		err_sys(e, EXIT_CTRUN, "srun environment");
		goto out;
	}
	if (batch_srun_argv(b->o, b->t, b->env.v, b->self, resilient ? &on : NULL, &argv, e) < 0)
		goto out;
	if (b->watched &&
	    watch_begin(&b->watch, restart, b->order.v, b->o->hang_timeout * 1000LL,
			options_hang_first(b->o) * 1000LL) < 0) {
		err_sys(e, EXIT_CTRUN, "watch");
		goto out;
	}
	if (b->o->verbose > 0)
		fprintf(stderr, "ctrun: batch mode: starting the step on %zu nodes: %s\n",
			b->order.n, list);
	a.argv = argv.v;
	a.envp = b->env.v;
	if (attempt_run(&a, r, e) < 0)
		goto out;
	if (b->o->verbose > 0)
		fprintf(stderr, "ctrun: batch mode: the step ended with status %d\n", r->status);
	for (size_t i = 0; i < r->lost.n; i++)
		nodeplan_leave_out(&b->plan, r->lost.v[i], r->why.v[i]);
	rv = 0;
out:
	free(list);
	strv_free(&argv);
	return rv;
}

/* Whether the failed attempt r may be followed by another (and if not,
 * the line that says why, when it is the batch ctrun's own stop). */
static bool may_restart(struct batch *b, long restart, const struct attempt_result *r)
{
	const struct options *o = b->o;

	/* A job being stopped is not failing: no restart (as launch.c). */
	if (r->status == 0 || r->signalled || r->stopped != 0)
		return false;
	if (restart >= o->max_restarts) {
		if ((r->hung || r->lost.n > 0) && !o->quiet && o->max_restarts == 0)
			fprintf(stderr, "ctrun: not restarting the step: no restarts (--max-restarts 0)\n");
		else if ((r->hung || r->lost.n > 0) && !o->quiet)
			fprintf(stderr, "ctrun: not restarting the step: --max-restarts %ld spent\n",
				o->max_restarts);
		return false;
	}
	return !stopped_from_outside(o, b->t, b->stops, r->silent_end);
}

static int batch_loop(struct batch *b, struct err *e)
{
	char why[512], cause[128] = "", change[1024];
	int rv = -1, stopped = 0;

	for (long restart = 0;; restart++) {
		struct attempt_result r;

		if (b->health && check_health(b, &stopped, e) < 0)
			return -1;
		if (stopped != 0)
			return 128 + stopped;
		if (nodeplan_next(&b->plan, &b->order, why, sizeof(why)) < 0) {
			if (restart == 0)
				return err_set(e, EXIT_CTRUN, "cannot start the step: %s", why);
			if (!b->o->quiet)
				fprintf(stderr, "ctrun: not restarting the step: %s\n", why);
			return rv;
		}
		if (restart > 0 && !b->o->quiet) {
			describe_change(&b->last, &b->order, change, sizeof(change));
			fprintf(stderr, "ctrun: step failed with status %d%s; restarting (%ld/%ld)%s\n",
				rv, cause, restart, b->o->max_restarts, change);
		}
		if (run_attempt(b, restart, &r, e) < 0)
			return -1;
		rv = r.status;
		if (r.hung)
			snprintf(cause, sizeof(cause), " (it hung)");
		else if (r.lost.n > 0)
			snprintf(cause, sizeof(cause), " (node %s lost)", r.lost.v[0]);
		else
			cause[0] = '\0';
		strv_free(&b->last);
		b->last = b->order;
		b->order = (struct strv){ 0 };
		if (!may_restart(b, restart, &r)) {
			attempt_result_free(&r);
			return rv;
		}
		attempt_result_free(&r);
	}
}

int batch_run(const struct options *o, const struct topo *t, char *const *envp, struct err *e)
{
	struct batch b = { .o = o, .t = t, .stage = { .from = "", .to = "" } };
	struct strv argv = { 0 };
	char why[512];
	int rv = -1;

	b.watch.lfd = -1;
	/* The same binary on every node: the shared file system's path. */
	if (realpath("/proc/self/exe", b.self) == NULL)
		return err_sys(e, EXIT_CTRUN, "finding ctrun's own path");
	/* Bad --spares or --nnodes: refused before any step. */
	if (nodeplan_init(&b.plan, t->nodes.v, o->spares, o->nnodes_min, o->nnodes_max, e) < 0)
		goto out;
	b.watched = options_cmd_is(o, "run") && !o->dry_run;
	b.health = b.watched && (nodeplan_resilient(&b.plan) || o->health_check != NULL ||
				 o->max_restarts > 0);
	if (o->dry_run) {
		struct batch_on on = { 0 };

		if (nodeplan_next(&b.plan, &b.order, why, sizeof(why)) < 0) {
			err_set(e, EXIT_CTRUN, "cannot start the step: %s", why);
			goto out;
		}
		on.nodes = b.order.v;
		if (batch_srun_argv(o, t, envp, b.self, nodeplan_resilient(&b.plan) ? &on : NULL,
				    &argv, e) < 0)
			goto out;
		shell_quote_argv(stdout, argv.v);
		putchar('\n');
		rv = 0;
		goto out;
	}
	if (batch_setup(&b, envp, e) == 0)
		rv = batch_loop(&b, e);
	/* The scancels of steps with a dead node: done before the job goes on. */
	step_helpers_reap(6000);
out:
	if (b.env.n > 0)
		stage_remove(t, b.env.v, &b.stage);
	if (b.stops[0] != '\0')
		batchstop_remove(b.stops);
	if (b.watch.lfd >= 0)
		watch_close(&b.watch);
	nodeplan_free(&b.plan);
	strv_free(&b.order);
	strv_free(&b.last);
	strv_free(&argv);
	strv_free(&b.env);
	return rv;
}
