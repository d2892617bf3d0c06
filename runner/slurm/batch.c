/* batch.c - `ctrun train.py` in an sbatch script: there is no step yet,
 * so ctrun re-launches itself with one task per node
 * (srun --ntasks-per-node=1 --kill-on-bad-exit=1), forwards signals to
 * srun and restarts the whole step for --max-restarts. */
#include "batch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quote.h"
#include "tasks.h"
#include "strv.h"
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

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static int run_step(char **argv, char **envp, int *status, struct err *e)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
	pid_t pid;

	sigemptyset(&sa.sa_mask);
	pid = fork();
	if (pid < 0)
		return err_sys(e, EXIT_CTRUN, "fork srun");
	if (pid == 0) {
		execvpe(argv[0], argv, envp);
		fprintf(stderr, "ctrun: cannot run srun: %s\n", strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	child_pid = pid;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(*sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return err_sys(e, EXIT_CTRUN, "waiting for srun");
	child_pid = 0;
	return 0;
}

int batch_run(const struct options *o, const struct topo *t, char *const *envp, struct err *e)
{
	struct strv argv = { 0 }, env = { 0 };
	char self[PATH_MAX];
	int rv = -1, status = 0;

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
	for (long restart = 0;; restart++) {
		char count[32];

		snprintf(count, sizeof(count), "%ld", restart);
		if (strv_setenv(&env, "CTRUN_RESTART_COUNT", count, 1) < 0)
			goto sys;
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: batch mode: starting the step on %ld nodes\n", t->nnodes);
		if (run_step(argv.v, env.v, &status, e) < 0)
			goto out;
		rv = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (rv == 0 || !WIFEXITED(status) || restart >= o->max_restarts)
			break;
		if (!o->quiet)
			fprintf(stderr, "ctrun: step failed with status %d; restarting (%ld/%ld)\n", rv,
				restart + 1, o->max_restarts);
	}
	goto out;
sys:
	err_sys(e, EXIT_CTRUN, "srun environment");
out:
	strv_free(&argv);
	strv_free(&env);
	return rv;
}
