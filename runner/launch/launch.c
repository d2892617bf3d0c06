/* launch.c - this node's part of a run (standalone, node or task mode):
 * the rendezvous address, each worker's argv/env/CPUs, supervision,
 * cancelling the Slurm step when a worker fails, and local restarts. */
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batchstop.h"
#include "command.h"
#include "phase.h"
#include "gpu.h"
#include "hostlist.h"
#include "cpubind.h"
#include "hangwatch.h"
#include "step.h"
#include "netinfo.h"
#include "quote.h"
#include "supervise.h"
#include "trustdir.h"
#include "util.h"
#include "watchclient.h"
#include "workerenv.h"

extern char **environ;

int launch_topology(const struct options *o, struct topo *t, struct err *e)
{
	char host[256] = "localhost";

	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	if (topo_detect(o, environ, host, gpu_count_dev_files(), t, e) < 0)
		return -1;
	if (o->verbose > 0 && strcmp(t->job_id, "none") != 0) {
		char how[PATH_MAX + 512];

		hostlist_describe(how, sizeof(how));
		fprintf(stderr, "ctrun: hostlists on %s: %s\n", t->host, how);
	}
	return 0;
}

int launch_prepare(struct topo *t, struct err *e)
{
	char addr[256];

	if (t->nnodes > 1 || t->world_size > t->nproc) {
		if (net_resolve_master(t->master_addr, t->node_rank == 0, addr, sizeof(addr), e) < 0)
			return -1;
		free(t->master_addr);
		t->master_addr = strdup(addr);
		if (t->master_addr == NULL)
			return err_sys(e, EXIT_CTRUN, "master address");
		/* For NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME: best effort, the
		 * libraries' own guess remains when there is no answer. */
		if (net_route_ifname(t->master_addr, t->ifname, sizeof(t->ifname), e) < 0) {
			t->ifname[0] = '\0';
			*e = (struct err){ 0 };
		}
	}
	if (t->master_port == 0 && net_free_port(&t->master_port, e) < 0)
		return -1;
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int launch_command(const struct options *o, struct strv *argv, struct err *e)
{
	if (o->command.n == 0)
		return err_set(e, EXIT_USAGE, "no command given (see ctrun --help)");
	/* Like torchrun: a training script runs under the interpreter. */
	if (!o->no_python && ends_with(o->command.v[0], ".py") &&
	    strv_push(argv, o->python != NULL ? o->python : "python3") < 0)
		return err_sys(e, EXIT_CTRUN, "argv");
	if (strv_extend(argv, o->command.v) < 0)
		return err_sys(e, EXIT_CTRUN, "argv");
	return 0;
}

/* Worker i's share of this task's CPUs: contiguous and even, or none
 * (inherit) when there are fewer CPUs than workers. */
bool launch_cpu_share(const cpu_set_t *all, long i, long n, cpu_set_t *out)
{
	size_t cpus[CPU_SETSIZE];
	long k = 0, lo, hi;

	for (size_t c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, all))
			cpus[k++] = c;
	if (n <= 1 || k < n)
		return false;
	lo = i * k / n;
	hi = (i + 1) * k / n;
	CPU_ZERO(out);
	for (long c = lo; c < hi; c++)
		CPU_SET(cpus[c], out);
	return true;
}

static long env_restart_count(char *const *envp)
{
	const char *v = envp_get(envp, "CTRUN_RESTART_COUNT");
	long n;

	return v != NULL && parse_long(v, 0, 1000, &n) == 0 ? n : 0;
}

/* --dry-run: what would run, shell-quoted; only the variables ctrun sets
 * are shown, the rest of the environment is inherited as it is. */
static int print_plan(const struct options *o, const struct topo *t, char *const *envp,
		      const struct strv *argv, long restart, struct err *e)
{
	struct strv base = { 0 };

	if (workerenv_base(o, envp, &base) < 0)
		return err_sys(e, EXIT_CTRUN, "worker environment");
	for (long i = 0; i < t->nproc; i++) {
		struct strv vars = { 0 };

		if (workerenv_vars(t, o, base.v, restart, i, &vars, e) < 0) {
			strv_free(&vars);
			strv_free(&base);
			return -1;
		}
		printf("# rank %ld (local rank %ld) on %s\nenv", t->rank_base + i,
		       t->local_rank_base + i, t->host);
		for (size_t k = 0; k < vars.n; k++) {
			putchar(' ');
			shell_quote(stdout, vars.v[k]);
		}
		putchar(' ');
		shell_quote_argv(stdout, argv->v);
		putchar('\n');
		strv_free(&vars);
	}
	if (o->clean_env)
		printf("# --clean-env: of the host's environment only SLURM_*, TERM, HOME, USER, "
		       "LOGNAME and --env KEY reach the workers\n");
	strv_free(&base);
	return 0;
}

int launch_run_here(const struct options *o, struct topo *t, char *const *envp,
		    const struct strv *argv, long restart, struct supervise_result *r,
		    struct err *e)
{
	struct supervise_opts so = { .host = t->host, .prefix = o->prefix,
				     .grace_ms = (int)o->kill_timeout * 1000, .quiet = o->quiet };
	struct worker *w = calloc((size_t)t->nproc, sizeof(*w));
	struct strv *envs = calloc((size_t)t->nproc, sizeof(*envs));
	cpu_set_t *cpus = calloc((size_t)t->nproc, sizeof(*cpus));
	char logdir[PATH_MAX];
	struct step_cancel cancel;
	struct hangwatch hw;
	cpu_set_t all;
	int rv = -1;

	hangwatch_init(&hw, o, t);
	if (w == NULL || envs == NULL || cpus == NULL) {
		err_sys(e, EXIT_CTRUN, "workers");
		goto out;
	}
	if (hangwatch_dir(&hw, envp, e) < 0)
		goto out;
	if (sched_getaffinity(0, sizeof(all), &all) < 0)
		CPU_ZERO(&all);
	for (long i = 0; i < t->nproc; i++) {
		if (workerenv_build(t, o, envp, restart, i, &envs[i], e) < 0)
			goto out;
		if (hangwatch_env(&hw, t->rank_base + i, &envs[i]) < 0) {
			err_sys(e, EXIT_CTRUN, "worker environment");
			goto out;
		}
		w[i].rank = t->rank_base + i;
		w[i].local_rank = t->local_rank_base + i;
		w[i].argv = argv->v;
		w[i].envp = envs[i].v;
		w[i].cpus = cpubind_worker(&all, t, i, &cpus[i]) ? &cpus[i] : NULL;
	}
	if (o->dry_run) {
		rv = print_plan(o, t, envp, argv, restart, e);
		r->status = 0;
		goto out;
	}
	if (o->log_dir != NULL) {
		if (launch_log_dir(o->log_dir, t, true, logdir, sizeof(logdir), e) < 0)
			goto out;
		so.log_dir = logdir;
	}
	/* In a batch-mode step: tell the batch ctrun of a stop from outside. */
	so.on_stop_signal = batchstop_cb;
	so.arg = t;
	if (t->step_id != NULL && t->world_size > t->nproc) {
		so.on_first_failure = step_cancel_cb;
		if (step_cancel_argv(t, &cancel) == 0)
			so.on_death = cancel.argv;
	}
	if (hw.on) {
		so.heartbeat_dir = hw.dir;
		so.on_progress = hangwatch_cb;
		so.progress_arg = &hw;
	}
	phase_mark("setup");
	rv = supervise_run(w, (size_t)t->nproc, &so, r, e);
	phase_mark("workers");
out:
	hangwatch_end(&hw);
	for (long i = 0; envs != NULL && i < t->nproc; i++)
		strv_free(&envs[i]);
	free(envs);
	free(cpus);
	free(w);
	return rv;
}

int launch_log_dir(const char *dir, const struct topo *t, bool make, char *out, size_t size,
		   struct err *e)
{
	int fd;

	if (xsnprintf(out, size, "%s/%s/%s", dir, t->job_id, t->host) < 0)
		return err_set(e, EXIT_USAGE, "--log-dir %s: path too long", dir);
	if (!make)
		return 0;
	fd = trustdir_open(out, 0755, e);
	if (fd < 0)
		return err_wrap(e, "--log-dir %s", dir);
	close(fd);
	return 0;
}

/* Task and node mode (the user's own srun) and a run outside Slurm keep
 * their behaviour: the batch ctrun's options are said to do nothing here. */
static void say_batch_only(const struct options *o, const struct topo *t)
{
	char which[96] = "";

	if (o->quiet || t->node_rank != 0 || t->local_rank_base != 0)
		return;
	if (o->spares > 0)
		snprintf(which, sizeof(which), "--spares");
	if (o->nnodes_min != o->nnodes_max)
		snprintf(which + strlen(which), sizeof(which) - strlen(which), "%s--nnodes MIN:MAX",
			 which[0] ? ", " : "");
	if (o->hang_timeout > 0 && t->world_size > t->nproc)
		snprintf(which + strlen(which), sizeof(which) - strlen(which), "%s--hang-timeout",
			 which[0] ? ", " : "");
	if (which[0] != '\0')
		fprintf(stderr, "ctrun: %s: for ctrun called from the batch script, which restarts "
			"the step on the nodes left; ignored in %s mode\n", which, mode_name(t->mode));
}

int launch_local(const struct options *o, struct topo *t, char *const *envp, launch_run_fn run,
		 struct err *e)
{
	struct strv argv = { 0 };
	char path[PATH_MAX];
	long restart = env_restart_count(envp), max = o->max_restarts;
	const char *in_batch = envp_get(envp, "CTRUN_BATCH_STEP");
	bool batch_step = in_batch != NULL && strcmp(in_batch, "1") == 0;
	int rv = -1;

	if (launch_command(o, &argv, e) < 0)
		goto out;
	/* In a container the agent resolves the command, in the image. */
	if (o->image == NULL) {
		if (command_resolve(argv.v[0], envp_get(envp, "PATH"), path, sizeof(path), e) < 0)
			goto out;
		free(argv.v[0]);
		argv.v[0] = strdup(path);
		if (argv.v[0] == NULL) {
			err_sys(e, EXIT_CTRUN, "argv");
			goto out;
		}
	}
	if (launch_prepare(t, e) < 0)
		goto out;
	/* Restarts must restart every worker of the job together: here only
	 * when this ctrun owns them all; from a batch script ctrun restarts
	 * the whole srun step instead (batch.c). */
	if (max > 0 && (t->world_size > t->nproc || batch_step)) {
		if (!o->quiet && !batch_step && t->node_rank == 0)
			fprintf(stderr, "ctrun: --max-restarts applies when ctrun is called from the "
				"batch script (it restarts the whole step); not restarting here\n");
		max = 0;
	}
	if (!batch_step)
		say_batch_only(o, t);
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: %s mode on %s: node %ld/%ld, ranks %ld-%ld of %ld, "
			"master %s:%ld\n", mode_name(t->mode), t->host, t->node_rank, t->nnodes,
			t->rank_base, t->rank_base + t->nproc - 1, t->world_size, t->master_addr,
			t->master_port);
	for (;; restart++) {
		struct supervise_result r = { .failed_rank = -1 };

		if (run(o, t, envp, &argv, restart, &r, e) < 0)
			goto out;
		rv = r.status;
		if (r.peer_failed) {
			const char *why = watchc_stop_why();

			if (!o->quiet && why[0] != '\0')
				fprintf(stderr, "ctrun: stopped ranks %ld-%ld on %s: the batch ctrun "
					"stopped the step (%s)\n", t->rank_base,
					t->rank_base + t->nproc - 1, t->host, why);
			else if (!o->quiet)
				fprintf(stderr, "ctrun: stopped ranks %ld-%ld on %s: a rank on another "
					"node failed first\n", t->rank_base, t->rank_base + t->nproc - 1,
					t->host);
			break;
		}
		/* Hung (judged here: this ctrun runs the whole job), as timeout(1). */
		if (r.hung)
			rv = LAUNCH_HUNG;
		if (rv == 0 || r.got_signal != 0 || restart >= max)
			break;
		if (!o->quiet && r.hung)
			fprintf(stderr, "ctrun: restarting workers (%ld/%ld) after they hung\n",
				restart + 1, max);
		else if (!o->quiet)
			fprintf(stderr, "ctrun: restarting workers (%ld/%ld) after rank %ld failed\n",
				restart + 1, max, r.failed_rank);
	}
out:
	strv_free(&argv);
	return rv;
}

int launch_print_env(const struct options *o, const struct topo *t, char *const *envp,
		     struct err *e)
{
	long restart = env_restart_count(envp);
	struct strv base = { 0 };

	if (workerenv_base(o, envp, &base) < 0)
		return err_sys(e, EXIT_CTRUN, "worker environment");
	for (long i = 0; i < t->nproc; i++) {
		struct strv vars = { 0 };

		if (workerenv_vars(t, o, base.v, restart, i, &vars, e) < 0) {
			strv_free(&vars);
			strv_free(&base);
			return -1;
		}
		if (i > 0)
			putchar('\n');
		for (size_t k = 0; k < vars.n; k++)
			puts(vars.v[k]);
		strv_free(&vars);
	}
	strv_free(&base);
	return fflush(stdout) == 0 ? 0 : err_sys(e, EXIT_CTRUN, "stdout");
}
