/* run.c - one run of this node's workers inside a container: the
 * agent's spec, the runtime started once, signals forwarded, the agent's
 * events turned into Slurm's fail-fast (see container.h).
 *
 * ctrun and the agent talk through two FIFOs in the run directory
 * (runner/agent/agentproto.h): the agent's first worker failure makes
 * ctrun cancel the Slurm step at once, like launch.c does for workers of
 * its own; a peer's failure (SIGURG) goes to the agent as a message. */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentspec.h"
#include "agentwatch.h"
#include "batchstop.h"
#include "envctl.h"
#include "hangwatch.h"
#include "launch.h"
#include "step.h"
#include "quote.h"
#include "sigloop.h"
#include "slurmgpu.h"
#include "phase.h"
#include "util.h"
#include "workerenv.h"


/* What every spec inherits of the host's environment: its inheritable
 * variables (--clean-env: only the few it keeps), and --env KEY's host
 * values over the image's (agentspec.h, T). */
static int inherit(struct agent_spec *as, const struct ctr_round *rd)
{
	for (char *const *p = rd->envp; p != NULL && *p != NULL; p++)
		if (agentspec_inheritable(*p) && (!rd->o->clean_env || envctl_clean_keep(*p)) &&
		    strv_push(&as->inherit, *p) < 0)
			return -1;
	return envctl_host_values(rd->o->env.v, rd->envp, &as->host_over);
}

/* Under srun --mpi=pmi2: the step's PMI2 socket slurmstepd gave this
 * task (PMI_FD), which its worker needs in the container when it is the
 * task's only one (task mode, or a node's one task with one worker); 0 =
 * none (several workers of one task are no PMI ranks). */
static int pmi_socket(const struct topo *t, char *const *envp)
{
	const char *v = envp_get(envp, "PMI_FD");
	char *end;
	long fd;
	struct stat st;

	if (v == NULL || t->nproc != 1 || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || fd < 3 || fd > INT_MAX ||
	    fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return 0;
	return (int)fd;
}

/* The spec of a round of workers: the supervisor's settings, and each
 * worker's argv, environment (the torchrun contract) and CPUs. */
static int workers_spec(struct agent_spec *as, const struct ctr_setup *c, const struct ctr_round *rd,
			struct err *e)
{
	const struct options *o = rd->o;
	const struct topo *t = rd->t;
	cpu_set_t all;
	struct strv base = { 0 }; /* what the contract's defaults look at */
	struct hangwatch hw;

	as->host = strdup(t->host);
	as->prefix = o->prefix;
	as->quiet = o->quiet;
	as->grace_ms = o->kill_timeout * 1000;
	as->cwd = strdup(c->spec.cwd);
	as->events = strdup(AGENT_EVENTS);
	as->control = strdup(AGENT_CONTROL);
	/* --log-dir: the directory the set-up bound at its own path. */
	as->log_dir = c->log_dir[0] != '\0' ? strdup(c->log_dir) : NULL;
	if (as->host == NULL || as->cwd == NULL || as->events == NULL || as->control == NULL ||
	    (c->log_dir[0] != '\0' && as->log_dir == NULL) || inherit(as, rd) < 0 ||
	    workerenv_base(o, rd->envp, &base) < 0)
		return err_sys(e, EXIT_CTRUN, "agent spec");
	if (sched_getaffinity(0, sizeof(all), &all) < 0)
		CPU_ZERO(&all);
	for (long i = 0; i < t->nproc; i++) {
		struct agent_worker *w = agentspec_add_worker(as, t->rank_base + i,
							      t->local_rank_base + i, rd->argv->v);

		if (w == NULL) {
			strv_free(&base);
			return err_sys(e, EXIT_CTRUN, "agent spec");
		}
		if (workerenv_vars(t, o, base.v, rd->restart, i, &w->env, e) < 0) {
			strv_free(&base);
			return -1;
		}
		w->has_cpus = launch_cpu_share(&all, i, t->nproc, &w->cpus);
		/* The PMI2 socket is descriptor 3 in the container. */
		if (c->spec.pmi_fd > 0 && strv_setenv(&w->env, "PMI_FD", "3", 1) < 0) {
			strv_free(&base);
			return err_sys(e, EXIT_CTRUN, "agent spec");
		}
	}
	as->pmi_fd3 = c->spec.pmi_fd > 0;
	strv_free(&base);
	/* --hang-timeout: the agent makes the heartbeat files in the container. */
	hangwatch_init(&hw, o, t);
	if (hw.on && (as->heartbeat_base = strdup("/tmp")) == NULL)
		return err_sys(e, EXIT_CTRUN, "agent spec");
	return 0;
}

/* The spec of a shell (or a command in the foreground): one process, no
 * contract (a shell is no worker), --env KEY=VALUE over everything. */
static int shell_spec(struct agent_spec *as, const struct ctr_setup *c, const struct ctr_round *rd,
		      struct err *e)
{
	const struct options *o = rd->o;
	struct agent_worker *w;

	as->host = strdup(rd->t->host);
	as->cwd = c->spec.cwd != NULL ? strdup(c->spec.cwd) : NULL;
	w = agentspec_add_worker(as, 0, 0, rd->argv->v);
	if (as->host == NULL || (c->spec.cwd != NULL && as->cwd == NULL) || w == NULL ||
	    inherit(as, rd) < 0)
		return err_sys(e, EXIT_CTRUN, "agent spec");
	for (size_t k = 0; k < o->env.n; k++)
		if (strchr(o->env.v[k], '=') != NULL && strv_push(&w->env, o->env.v[k]) < 0)
			return err_sys(e, EXIT_CTRUN, "agent spec");
	return 0;
}

/* What the runtime's adapter tells the agent (rt.h ctr_plan), and a
 * worker's own GPU under --gpu-isolation named as the container numbers
 * it when the container renumbers its GPUs 0..n-1. */
static int plan_to_spec(struct agent_spec *as, const struct ctr_setup *c,
			const struct ctr_plan *p, const struct ctr_round *rd, struct err *e)
{
	const struct topo *t = rd->t;
	size_t ngpus = 0;

	/* --clean-env: what the runtime carried in of the host's goes. */
	for (char *const *v = rd->envp; rd->o->clean_env && p->agent_host_env && v != NULL &&
	     *v != NULL; v++)
		if (strchr(*v, '=') != NULL && strv_find(&as->inherit, *v) < 0 &&
		    strv_push(&as->host_drop, *v) < 0)
			return err_sys(e, EXIT_CTRUN, "agent spec");

	if (strv_extend(&as->over, p->agent_env.v) < 0 ||
	    strv_extend(&as->libdirs, p->agent_libdirs.v) < 0 ||
	    strv_extend(&as->entry, p->agent_entry.v) < 0)
		return err_sys(e, EXIT_CTRUN, "agent spec");
	as->complete_env = p->agent_complete_env;
	/* No command: the entrypoint alone, else the shell (cmd_shell.c). */
	as->entry_default = c->spec.run_default && as->entry.n > 0;
	as->image_scripts = p->agent_image_scripts;
	/* Who the workers are (ident.c): HOME, USER and LOGNAME over the
	 * container's own, and the agent's switch to the caller's ids. */
	if (ctr_ident_env(&c->spec, &as->over) < 0)
		return err_sys(e, EXIT_CTRUN, "agent spec");
	as->as_user = p->ident_nest;
	as->uid = (long)c->spec.uid;
	as->gid = (long)c->spec.gid;
	if (!p->gpus_renumbered || !rd->o->gpu_isolation || c->spec.gpu_ids == NULL ||
	    t->gpus.n == 0)
		return 0;
	for (const char *g = c->spec.gpu_ids; g != NULL; g = strchr(g, ',') ? strchr(g, ',') + 1
									      : NULL)
		ngpus++;
	for (size_t i = 0; i < as->n; i++) {
		size_t local = (size_t)(t->local_rank_base + (long)i);
		char idx[100];

		size_t pick = slurmgpu_pick((long)local, ngpus);
		const char *id = c->spec.gpu_ids;

		for (size_t k = 0; k < pick; k++)
			id = strchr(id, ',') + 1;
		/* A MIG device keeps its UUID inside (ocigpu.c); a GPU is its
		 * position among the container's. */
		if (strncmp(id, "MIG-", 4) == 0)
			snprintf(idx, sizeof(idx), "%.*s", (int)strcspn(id, ","), id);
		else
			snprintf(idx, sizeof(idx), "%zu", pick);
		if (strv_setenv(&as->w[i].env, "CUDA_VISIBLE_DEVICES", idx, 1) < 0)
			return err_sys(e, EXIT_CTRUN, "agent spec");
	}
	return 0;
}

/* --dry-run: the workers as the agent will start them, then the runtime's plan. */
static void print_dry(const struct agent_spec *as, const struct ctr_setup *c,
		      const struct ctr_plan *p)
{
	for (size_t i = 0; i < as->n; i++) {
		const struct agent_worker *w = &as->w[i];

		printf("# rank %ld (local rank %ld) on %s, in the container (ctrun-agent, cwd ",
		       w->rank, w->local_rank, as->host);
		shell_quote(stdout, as->cwd);
		printf(")\nenv");
		for (size_t k = 0; k < w->env.n; k++) {
			putchar(' ');
			shell_quote(stdout, w->env.v[k]);
		}
		putchar(' ');
		shell_quote_argv(stdout, w->argv.v);
		putchar('\n');
	}
	printf("# agent spec %s/spec: %zu worker(s), %zu inherited variables, events and "
	       "control FIFOs in %s\n", c->rundir, as->n, as->inherit.n, c->rundir);
	/* What the runtime's adapter asks of the agent (apptainer). */
	for (size_t i = 0; i < as->over.n; i++) {
		printf("# agent sets over the container's environment: ");
		shell_quote(stdout, as->over.v[i]);
		putchar('\n');
	}
	for (size_t i = 0; i < as->libdirs.n; i++) {
		printf("# agent appends to LD_LIBRARY_PATH where it exists: ");
		shell_quote(stdout, as->libdirs.v[i]);
		putchar('\n');
	}
	if (as->entry.n > 0) {
		printf(as->entry_default ? "# agent runs, with no arguments, the image's default "
					   "command: the first found of:"
					 : "# agent runs each command through the first entrypoint "
					   "found of:");
		for (size_t i = 0; i < as->entry.n; i++) {
			putchar(' ');
			shell_quote(stdout, as->entry.v[i]);
		}
		printf(as->entry_default ? "; the command above when none is there\n" : "\n");
	}
	if (as->complete_env)
		printf("# agent completes apptainer's environment: the image's /etc/environment "
		       "when apptainer read none, the host's LANG\n");
	if (as->image_scripts)
		printf("# agent sources the image's /.singularity.d/env/*.sh with its /bin/sh "
		       "(as apptainer does), when it has them\n");
	if (as->as_user)
		printf("# agent first enters a user namespace of its own mapping uid %ld and gid %ld "
		       "to the runtime's root: the workers run as uid %ld, gid %ld\n", as->uid,
		       as->gid, as->uid, as->gid);
	ctr_plan_print(&c->spec, p);
}

static int write_spec(const struct agent_spec *as, const struct ctr_setup *c, struct err *e)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0;
	int fd, rv = -1;

	if (xsnprintf(path, sizeof(path), "%s/spec", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (agentspec_format(as, &buf, &len, e) < 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
	} else if (write_all(fd, buf, len) < 0 || close(fd) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
	} else {
		rv = 0;
	}
	free(buf);
	return rv;
}

/* The plan phase, one for every run: the container runs the agent in mode
 * (NULL: a round of workers) on its spec; the runtime's plan, what it tells
 * the agent, and under --dry-run both printed (1: nothing more to do), else
 * the spec written (0). */
static int plan(struct agent_spec *as, struct ctr_setup *c, struct ctr_plan *p,
		const struct ctr_round *rd, const char *mode, struct err *e)
{
	strv_free(&c->spec.argv);
	if (strv_push(&c->spec.argv, AGENT_BIN) < 0 ||
	    (mode != NULL && strv_push(&c->spec.argv, mode) < 0) ||
	    strv_push(&c->spec.argv, AGENT_SPEC) < 0)
		return err_sys(e, EXIT_CTRUN, "container argv");
	if (ctr_make_plan(c, p, e) < 0 || plan_to_spec(as, c, p, rd, e) < 0)
		return -1;
	if (rd->o->dry_run) {
		print_dry(as, c, p);
		return fflush(stdout) == 0 ? 1 : err_sys(e, EXIT_CTRUN, "stdout");
	}
	return write_spec(as, c, e);
}

int container_run(const struct options *o, struct topo *t, char *const *envp,
		  const struct strv *argv, long restart, struct supervise_result *r,
		  struct err *e)
{
	const struct ctr_round rd = { o, t, envp, argv, restart };
	struct ctr_setup c;
	struct agent_spec as = { 0 };
	struct ctr_plan p = { 0 };
	int rv = -1;

	memset(r, 0, sizeof(*r));
	r->failed_rank = -1;
	if (ctr_setup_init(&c, o, t, envp, true, e) < 0)
		return -1;
	c.spec.pmi_fd = pmi_socket(t, envp);
	if (workers_spec(&as, &c, &rd, e) < 0 || (rv = plan(&as, &c, &p, &rd, NULL, e)) != 0) {
		rv = rv > 0 ? 0 : -1;
		goto out;
	}
	rv = -1;
	if (ctr_plan_write(&p, e) < 0)
		goto out;
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: %s container %s on %s (%s), image %s\n",
			ctr_runtime_name(c.spec.rt), c.id, t->host, c.spec.bin, c.image);
	rv = ctr_watch(&c, &p, &rd, r, e);
	/* --save: after a successful run, by node rank 0's first task. */
	if (rv == 0 && r->status == 0 && o->save != NULL && t->node_rank == 0 &&
	    t->local_rank_base == 0 && ctr_save(&c, o->save, o->cache_compression, o->quiet, e) < 0)
		rv = -1;
out:
	ctr_plan_free(&p);
	agentspec_free(&as);
	ctr_setup_free(&c);
	return rv;
}

static volatile sig_atomic_t fg_pid;

static void fg_forward(int sig)
{
	if (fg_pid > 0)
		kill((pid_t)fg_pid, sig);
}

/* Runs plan p in the foreground: the terminal and its signals are the
 * container's. */
static int run_fg(struct ctr_setup *c, struct ctr_plan *p, char *const *envp, struct err *e)
{
	int rv = -1, ws = 0;
	pid_t pid;
	struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = fg_forward };
	struct sigaction oint, oquit, oterm, ohup;

	if (ctr_plan_write(p, e) < 0)
		return -1;
	/* The terminal's ^C belongs to the shell in the container; TERM and
	 * HUP go to the runtime, which passes them on (dying here would leave
	 * the shell running as the init of its PID namespace). */
	sigemptyset(&fwd.sa_mask);
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	sigaction(SIGTERM, &fwd, &oterm);
	sigaction(SIGHUP, &fwd, &ohup);
	pid = ctr_plan_spawn(&c->spec, p, envp, e);
	fg_pid = pid;
	if (pid >= 0) {
		pid_t got;

		while ((got = waitpid(pid, &ws, 0)) < 0 && errno == EINTR)
			;
		rv = got == pid ? supervise_status(ws) : err_sys(e, EXIT_CTRUN, "waiting for %s",
								  c->spec.bin);
	}
	fg_pid = 0;
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	sigaction(SIGHUP, &ohup, NULL);
	return rv;
}

int ctr_run_exec(struct ctr_setup *c, const struct options *o, const struct topo *t,
		 char *const *envp, bool print, struct err *e)
{
	struct agent_spec as = { 0 };
	struct ctr_plan p = { 0 };
	struct strv cmd = { 0 };
	const struct ctr_round rd = { o, t, envp, &cmd, 0 };
	int rv;

	/* The command (or shell) as given; the container runs the agent. */
	if (strv_extend(&cmd, c->spec.argv.v) < 0) {
		rv = err_sys(e, EXIT_CTRUN, "agent spec");
		goto out;
	}
	/* ctrun env --image: every local worker as the run would start it. */
	if ((print ? workers_spec(&as, c, &rd, e) : shell_spec(&as, c, &rd, e)) < 0) {
		rv = -1;
		goto out;
	}
	rv = plan(&as, c, &p, &rd, print ? "--print-worker-env" : "--exec", e);
	if (rv == 0)
		rv = run_fg(c, &p, envp, e);
	else if (rv > 0)
		rv = 0;
out:
	strv_free(&cmd);
	ctr_plan_free(&p);
	agentspec_free(&as);
	return rv;
}

int container_run_workers(const struct options *o, struct topo *t, char *const *envp,
			  struct err *e)
{
	return launch_local(o, t, envp, o->image != NULL ? container_run : launch_run_here, e);
}
