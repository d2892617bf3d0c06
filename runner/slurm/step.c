/* step.c - acting on this job's Slurm steps from inside the job, through
 * Slurm's own commands (scancel, squeue) run with a deadline (see step.h). */
#include "step.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A controller that does not answer must never hold ctrun: Slurm's
 * commands answer in milliseconds. */
#define SLURM_CMD_TIMEOUT_MS 5000

/* The child's side: stdin and stderr on /dev/null, stdout on out_fd (or
 * /dev/null), the signal mask and SIGPIPE as a new program expects. */
static void child_exec(char *const argv[], int out_fd) __attribute__((noreturn));
static void child_exec(char *const argv[], int out_fd)
{
	int null = open("/dev/null", O_RDWR);
	sigset_t none;

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDERR_FILENO);
		dup2(out_fd >= 0 ? out_fd : null, STDOUT_FILENO);
	}
	/* The caller may block the signals it waits for, and ignore SIGPIPE:
	 * neither is the tool's. */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	_exit(127);
}

/* Runs argv (PATH lookup, no shell) with stdin and stderr on /dev/null;
 * its stdout goes to out (NUL-terminated, the rest dropped) or /dev/null.
 * Killed after SLURM_CMD_TIMEOUT_MS.  Returns its exit status, -1 when it
 * could not run or was killed. */
static int run_slurm(char *const argv[], char *out, size_t size)
{
	long deadline = mono_ms() + SLURM_CMD_TIMEOUT_MS;
	int fds[2] = { -1, -1 }, status = -1;
	size_t len = 0;
	pid_t pid;

	if (out != NULL && pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0)
		child_exec(argv, fds[1]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (pid < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		return -1;
	}
	while (fds[0] >= 0) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		long left = deadline - mono_ms();
		char buf[4096];
		ssize_t n;

		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			break;
		n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			close(fds[0]);
			fds[0] = -1;
			break;
		}
		for (ssize_t i = 0; i < n && len + 1 < size; i++)
			out[len++] = buf[i];
	}
	if (out != NULL)
		out[len] = '\0';
	status = wait_child(pid, deadline - mono_ms());
	if (fds[0] >= 0)
		close(fds[0]);
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* scancel --signal=SIG JOB.STEP, argv into buffers the caller keeps. */
static int scancel_argv(const char *job_id, const char *step_id, int sig, char *step, size_t ssize,
			char *signal_opt, size_t osize)
{
	if (xsnprintf(step, ssize, "%s.%s", job_id, step_id) < 0)
		return -1;
	snprintf(signal_opt, osize, "--signal=%d", sig);
	return 0;
}

int step_signal(const char *job_id, const char *step_id, int sig)
{
	char step[160], signal_opt[32];
	char *argv[] = { "scancel", "--quiet", signal_opt, step, NULL };

	if (scancel_argv(job_id, step_id, sig, step, sizeof(step), signal_opt, sizeof(signal_opt)) < 0)
		return -1;
	return run_slurm(argv, NULL, 0) == 0 ? 0 : -1;
}

pid_t step_scancel_start(const char *job_id, const char *step_id, int sig)
{
	char step[160], signal_opt[32];
	char *argv[] = { "scancel", "--quiet", step, sig != 0 ? signal_opt : NULL, NULL };
	pid_t pid;

	if (scancel_argv(job_id, step_id, sig, step, sizeof(step), signal_opt,
			 sizeof(signal_opt)) < 0)
		return 0;
	pid = fork();
	if (pid == 0)
		child_exec(argv, -1);
	return pid > 0 ? pid : 0;
}

int step_cancel_argv(const struct topo *t, struct step_cancel *c)
{
	if (scancel_argv(t->job_id, t->step_id, SIGURG, c->step, sizeof(c->step), c->signal_opt,
			 sizeof(c->signal_opt)) < 0)
		return -1;
	c->argv[0] = "scancel";
	c->argv[1] = "--quiet";
	c->argv[2] = c->signal_opt;
	c->argv[3] = c->step;
	c->argv[4] = NULL;
	return 0;
}

pid_t step_cancel_start(const struct topo *t)
{
	struct step_cancel c;
	pid_t pid;

	if (step_cancel_argv(t, &c) < 0)
		return 0;
	pid = fork();
	if (pid == 0)
		child_exec(c.argv, -1);
	return pid > 0 ? pid : 0;
}

/* The scancels started by step_scancel_start, until reaped. */
static pid_t helpers[16];

void step_helper_keep(pid_t pid)
{
	if (pid <= 0)
		return;
	step_helpers_reap(0);
	for (size_t i = 0; i < sizeof(helpers) / sizeof(*helpers); i++)
		if (helpers[i] == 0) {
			helpers[i] = pid;
			return;
		}
	step_helper_finish(pid); /* no room: now, then */
}

void step_helpers_reap(long wait_ms)
{
	long long until = mono_ms() + wait_ms;

	for (size_t i = 0; i < sizeof(helpers) / sizeof(*helpers); i++) {
		if (helpers[i] == 0)
			continue;
		if (wait_ms > 0)
			wait_child(helpers[i], (long)(until > mono_ms() ? until - mono_ms() : 0));
		else if (waitpid(helpers[i], NULL, WNOHANG) == 0)
			continue;
		helpers[i] = 0;
	}
}

void step_helper_finish(pid_t pid)
{
	if (pid > 0)
		wait_child(pid, SLURM_CMD_TIMEOUT_MS);
}

int job_steps(const char *job_id, struct strv *out)
{
	char job[64], text[8192];
	char *argv[] = { "squeue", "--noheader", "--steps", "--jobs", job, "--format=%i", NULL };
	size_t jlen;

	if (xsnprintf(job, sizeof(job), "%s", job_id) < 0 || run_slurm(argv, text, sizeof(text)) != 0)
		return -1;
	jlen = strlen(job);
	/* "7.0", "7.batch", "7.extern": the numbered ones are steps of ours. */
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		long n;

		line += strspn(line, " ");
		if (strncmp(line, job, jlen) == 0 && line[jlen] == '.' &&
		    parse_long(line + jlen + 1, 0, 1L << 31, &n) == 0 &&
		    strv_push(out, line + jlen + 1) < 0)
			return -1;
	}
	return 0;
}

pid_t step_cancel_cb(void *topo)
{
	return step_cancel_start(topo);
}

/* Slurm's job states (squeue %T) after which a job runs nothing more on
 * its nodes; any other state, known or new, counts as live. */
static bool state_ended(const char *s)
{
	static const char *const ended[] = { "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE",
					     "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
					     "TIMEOUT", "REVOKED" };

	for (size_t i = 0; i < sizeof(ended) / sizeof(*ended); i++)
		if (strcmp(s, ended[i]) == 0)
			return true;
	return false;
}

int squeue_live_jobs_parse(const char *text, struct strv *out)
{
	const char *p = text;

	while (*p != '\0') {
		const char *end = strchr(p, '\n');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		char line[256], *id, *state, *rest;
		long n;

		if (len >= sizeof(line))
			return -1;
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (end != NULL);
		id = strtok_r(line, " \t", &rest);
		if (id == NULL)
			continue; /* a blank line */
		state = strtok_r(NULL, " \t", &rest);
		if (state == NULL || strtok_r(NULL, " \t", &rest) != NULL ||
		    parse_long(id, 0, LONG_MAX, &n) < 0)
			return -1;
		if (!state_ended(state) && strv_push(out, id) < 0)
			return -1;
	}
	return 0;
}

int user_live_jobs(uid_t uid, struct strv *out)
{
	char user[32], text[65536];
	/* %A: the job id itself, also for an array's tasks (%i is 12_3). */
	char *argv[] = { "squeue", "--noheader", "--states=all", user, "--format=%A %T", NULL };

	snprintf(user, sizeof(user), "--user=%u", (unsigned)uid);
	if (run_slurm(argv, text, sizeof(text)) != 0)
		return -1;
	/* A full buffer may have cut the list: then some live job is missing. */
	if (strlen(text) + 1 >= sizeof(text))
		return -1;
	return squeue_live_jobs_parse(text, out);
}

int squeue_job_state_parse(const char *text, char *state, size_t size)
{
	const char *p = text + strspn(text, " \t\n");
	size_t len = strcspn(p, " \t\n");

	/* One word and nothing after it: a job array or a second line is not
	 * the one job asked for. */
	if (len == 0 || len >= size || p[len + strspn(p + len, " \t\n")] != '\0')
		return -1;
	memcpy(state, p, len);
	state[len] = '\0';
	return 0;
}

int job_state(const char *job_id, char *state, size_t size)
{
	char job[64], text[256];
	char *argv[] = { "squeue", "--noheader", "--states=all", "--jobs", job, "--format=%T",
			 NULL };

	if (xsnprintf(job, sizeof(job), "%s", job_id) < 0 || run_slurm(argv, text, sizeof(text)) != 0)
		return -1;
	return squeue_job_state_parse(text, state, size);
}
