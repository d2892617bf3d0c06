/* batch.c - `ctrun train.py` in an sbatch script: there is no step yet,
 * so ctrun re-launches itself with one task per node
 * (srun --ntasks-per-node=1 --kill-on-bad-exit=1), passes signals on to the
 * step and restarts the whole step for --max-restarts, unless it was told
 * to stop, the step was stopped from outside (batchstop.h) or the job is
 * ending. */
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

#include "batchstop.h"
#include "phase.h"
#include "quote.h"
#include "sigloop.h"
#include "stage.h"
#include "step.h"
#include "strv.h"
#include "tasks.h"
#include "util.h"

int batch_srun_argv(const struct options *o, const struct topo *t, char *const *envp,
		    const char *self, struct strv *argv, struct err *e)
{
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
	ret |= strv_push(argv, "srun");
	ret |= strv_pushf(argv, "--nodes=%ld", t->nnodes);
	ret |= strv_pushf(argv, "--ntasks=%ld", t->nnodes);
	ret |= strv_push(argv, "--ntasks-per-node=1");
	ret |= strv_push(argv, "--kill-on-bad-exit=1");
	if (cpus > 0)
		ret |= strv_pushf(argv, "--cpus-per-task=%ld", cpus);
	ret |= strv_push(argv, "--export=ALL");
	ret |= strv_push(argv, self);
	ret |= strv_extend(argv, o->args.v);
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "srun argv") : 0;
}

/* Signals of the batch step for the workers.  srun answers TERM, HUP and
 * QUIT by SIGKILLing the step's tasks (src/srun/signals.c), which would
 * take a preempted job's checkpoint with it, so ctrun hands those (and INT,
 * which srun turns into a status line) to the step's tasks itself with
 * scancel: every node's ctrun gets the signal and passes it on to its
 * workers with the --kill-timeout grace.  srun forwards USR1 and USR2 as
 * they are (sbatch --signal=B:USR1@T, the usual preemption warning): the
 * checkpoint signals of core/sigloop.h. */

/* A stop signal for the step's tasks: through scancel to each step of the
 * job Slurm lists (the one srun started), else (no step yet, or Slurm does
 * not answer) to srun, which ends the step its way. */
static void stop_step(const struct topo *t, pid_t srun, int sig)
{
	struct strv steps = { 0 };
	size_t sent = 0;

	if (job_steps(t->job_id, &steps) == 0)
		for (size_t i = 0; i < steps.n; i++)
			sent += step_signal(t->job_id, steps.v[i], sig) == 0;
	strv_free(&steps);
	if (sent == 0)
		kill(srun, SIGTERM);
}

struct srun_watch {
	const struct topo *t;
	pid_t pid;
	int *status;
	int *stopped;
	bool done;
};

static void srun_signal(void *arg, int sig)
{
	struct srun_watch *w = arg;

	if (sigloop_is_checkpoint(sig)) {
		kill(w->pid, sig);
	} else if (*w->stopped == 0) {
		*w->stopped = sig;
		stop_step(w->t, w->pid, sig);
	} else {
		kill(w->pid, SIGTERM); /* asked again: srun ends the step now */
	}
}

static void srun_exit(void *arg, pid_t pid, int ws)
{
	struct srun_watch *w = arg;

	if (pid == w->pid) {
		*w->status = ws;
		w->done = true;
	}
}

/* srun in a child: its own process group, the caller's signal mask. */
__attribute__((noreturn)) static void exec_srun(char **argv, char **envp, const sigset_t *old)
{
	/* Its own process group: a signal to the batch step's group
	 * (scancel --batch) reaches ctrun, which decides, not srun.
	 * Not from a terminal (an salloc shell): there srun stays in
	 * the foreground group, to read the terminal and get ^C. */
	if (!isatty(STDIN_FILENO))
		setpgid(0, 0);
	sigprocmask(SIG_SETMASK, old, NULL);
	execvpe(argv[0], argv, envp);
	fprintf(stderr, "ctrun: cannot run srun: %s\n", strerror(errno));
	_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* Runs srun until it ends; *stopped = the first stop signal ctrun got. */
static int run_step(const struct topo *t, char **argv, char **envp, int *status, int *stopped,
		    struct err *e)
{
	struct srun_watch w = { .t = t, .status = status, .stopped = stopped };
	const struct sigloop_ops ops = { .on_signal = srun_signal, .on_exit = srun_exit,
					 .arg = &w };
	struct sigloop l;
	int rv = -1;

	if (sigloop_start(&l, 0, &ops, e) < 0)
		return -1;
	w.pid = fork();
	if (w.pid < 0) {
		err_sys(e, EXIT_CTRUN, "fork srun");
		goto out;
	}
	if (w.pid == 0)
		exec_srun(argv, envp, &l.old);
	sigloop_add_child(&l, w.pid);
	while (!w.done) {
		if (sigloop_wait(&l, NULL, 0, -1) < 0) {
			err_sys(e, EXIT_CTRUN, "waiting for srun");
			kill(w.pid, SIGKILL);
			waitpid(w.pid, status, 0);
			goto out;
		}
	}
	rv = 0;
out:
	sigloop_close(&l);
	return rv;
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
 * says why. */
static bool stopped_from_outside(const struct options *o, const struct topo *t, const char *stops)
{
	char host[256], sig[32], state[64] = "";
	const char *why;

	if (batchstop_read(stops, host, sizeof(host), sig, sizeof(sig)) == 1) {
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

int batch_run(const struct options *o, const struct topo *t, char *const *envp, struct err *e)
{
	struct strv argv = { 0 }, env = { 0 };
	char self[PATH_MAX];
	struct stage stage = { .from = "", .to = "" };
	char stops[PATH_MAX] = "";
	int rv = -1, status = 0, stopped = 0;

	/* The same binary on every node: the shared file system's path. */
	if (realpath("/proc/self/exe", self) == NULL) {
		err_sys(e, EXIT_CTRUN, "finding ctrun's own path");
		goto out;
	}
	if (batch_srun_argv(o, t, envp, self, &argv, e) < 0)
		goto out;
	if (o->dry_run) {
		shell_quote_argv(stdout, argv.v);
		putchar('\n');
		rv = 0;
		goto out;
	}
	if (strv_extend(&env, envp) < 0)
		goto sys;
	/* Ours to set per step: srun would otherwise read the job's
	 * per-task GPU request and give one task per node only that much. */
	strv_unsetenv(&env, "SLURM_GPUS_PER_TASK");
	strv_unsetenv(&env, "SLURM_NTASKS_PER_GPU");
	strv_unsetenv(&env, "SLURM_CPUS_PER_TASK");
	if (strv_setenv(&env, "CTRUN_BATCH_STEP", "1", 1) < 0)
		goto sys;
	/* The job's secret for every node's ctrun (jobkey.h): the rendezvous
	 * of check/bench and the --timings gather then need no key file on a
	 * shared $HOME.  One the user set is kept. */
	if (envp_get(env.v, JOBKEY_SECRET_ENV) == NULL) {
		uint8_t secret[JOBKEY_LEN];
		char hex[JOBKEY_HEX_LEN + 1];
		int ret;

		if (jobkey_random(secret, sizeof(secret), e) < 0)
			goto out;
		jobkey_to_hex(secret, hex);
		ret = strv_setenv(&env, JOBKEY_SECRET_ENV, hex, 1);
		explicit_bzero(secret, sizeof(secret));
		explicit_bzero(hex, sizeof(hex));
		if (ret < 0)
			goto sys;
	}
	if (batchstop_dir_make(stops, sizeof(stops), e) < 0) {
		stops[0] = '\0';
		goto out;
	}
	if (strv_setenv(&env, BATCHSTOP_ENV, stops, 1) < 0)
		goto sys;
	/* The image to every node once, before the first step. */
	if (stage_image(o, t, &env, &stage, e) < 0)
		goto out;
	if ((o->timings || o->verbose > 0) && set_stage_timings(t, &env) < 0)
		goto sys;
	for (long restart = 0;; restart++) {
		char count[32];

		snprintf(count, sizeof(count), "%ld", restart);
		if (strv_setenv(&env, "CTRUN_RESTART_COUNT", count, 1) < 0)
			goto sys;
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: batch mode: starting the step on %ld nodes\n", t->nnodes);
		if (run_step(t, argv.v, env.v, &status, &stopped, e) < 0)
			goto out;
		rv = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		/* A job being stopped is not failing: no restart (as launch.c). */
		if (rv == 0 || !WIFEXITED(status) || stopped != 0 || restart >= o->max_restarts ||
		    stopped_from_outside(o, t, stops))
			break;
		if (!o->quiet)
			fprintf(stderr, "ctrun: step failed with status %d; restarting (%ld/%ld)\n", rv,
				restart + 1, o->max_restarts);
	}
	goto out;
sys:
	err_sys(e, EXIT_CTRUN, "srun environment");
out:
	stage_remove(t, env.v, &stage);
	if (stops[0] != '\0')
		batchstop_remove(stops);
	strv_free(&argv);
	strv_free(&env);
	return rv;
}
