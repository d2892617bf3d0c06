/* attempt.c - one srun step of a batch-mode run, watched (see attempt.h). */
#include "attempt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigloop.h"
#include "step.h"
#include "util.h"

struct run {
	const struct attempt *a;
	struct attempt_result *r;
	pid_t pid;
	int ws;
	bool done;         /* srun reaped */
	bool stopping;     /* the batch ctrun stopped the step */
	long long stop_until;
};

/* Signals of the batch step for the workers.  srun answers TERM, HUP and
 * QUIT by SIGKILLing the step's tasks (src/srun/signals.c), which would
 * take a preempted job's checkpoint with it, so ctrun hands those (and INT,
 * which srun turns into a status line) to the step's tasks itself with
 * scancel: every node's ctrun gets the signal and passes it on to its
 * workers with the --kill-timeout grace.  srun forwards USR1 and USR2 as
 * they are (sbatch --signal=B:USR1@T, the usual preemption warning): the
 * checkpoint signals of core/sigloop.h. */

/* A signal for the step's tasks: through scancel to each step of the job
 * Slurm lists (the one srun started), else (no step yet, or Slurm does not
 * answer) to srun, which ends the step its way. */
static void signal_steps(const struct topo *t, pid_t srun, int sig)
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

/* The attempt's own step (its nodes said which), else every step of the job. */
static void signal_attempt(struct run *u, int sig)
{
	char step[32];

	if (u->a->watch != NULL && u->a->watch->step >= 0) {
		snprintf(step, sizeof(step), "%ld", u->a->watch->step);
		step_signal(u->a->t->job_id, step, sig);
	} else {
		signal_steps(u->a->t, u->pid, sig);
	}
}

static void on_signal(void *arg, int sig)
{
	struct run *u = arg;

	if (sigloop_is_checkpoint(sig)) {
		kill(u->pid, sig);
	} else if (u->r->stopped == 0) {
		u->r->stopped = sig;
		signal_steps(u->a->t, u->pid, sig);
	} else {
		kill(u->pid, SIGTERM); /* asked again: srun ends the step now */
	}
}

static void on_exit_cb(void *arg, pid_t pid, int ws)
{
	struct run *u = arg;

	if (pid == u->pid) {
		u->ws = ws;
		u->done = true;
	}
}

static void on_fd(void *arg, size_t k, short revents)
{
	struct run *u = arg;

	watch_ready(u->a->watch, k, revents);
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

/* The batch ctrun stops the step: each node still there is told why and
 * gets SIGURG, as from a failing peer, and has grace_ms to end. */
static void begin_stop(struct run *u, const char *why)
{
	if (u->stopping)
		return;
	u->stopping = true;
	u->stop_until = mono_ms() + u->a->grace_ms;
	watch_tell_stop(u->a->watch, why);
	signal_attempt(u, SIGURG);
}

/* What the watch saw since the last round. */
static void watch_events(struct run *u)
{
	char host[WATCH_HOST_MAX], why[1024], stop[WATCH_WHY_MAX];
	enum watch_event ev;

	while ((ev = watch_check(u->a->watch, host, sizeof(host), why, sizeof(why))) ==
	       WATCH_EV_LOST || ev == WATCH_EV_HANG) {
		if (ev == WATCH_EV_LOST) {
			if (strv_push(&u->r->lost, host) < 0 || strv_push(&u->r->why, why) < 0)
				continue;
			if (!u->a->quiet)
				fprintf(stderr, "ctrun: node %s left out: lost during the step: %s\n",
					host, why);
			snprintf(stop, sizeof(stop), "node %s was lost", host);
		} else {
			u->r->hung = true;
			if (!u->a->quiet)
				fprintf(stderr, "ctrun: the step hung: %s; stopping it\n", why);
			snprintf(stop, sizeof(stop), "the step hung");
		}
		/* A stop from outside is under way already: it goes on. */
		if (u->r->stopped == 0)
			begin_stop(u, stop);
	}
	/* Stopped and every node has ended: srun may still wait for a dead one. */
	if (ev == WATCH_EV_ALL_DONE && u->stopping)
		u->stop_until = 0;
}

/* srun did not end by itself: its step is cancelled and srun killed. */
static void finish(struct run *u)
{
	struct strv steps = { 0 };
	char step[32];

	if (u->a->watch != NULL && u->a->watch->step >= 0) {
		snprintf(step, sizeof(step), "%ld", u->a->watch->step);
		step_kill(u->a->t->job_id, step);
	} else if (job_steps(u->a->t->job_id, &steps) == 0) {
		for (size_t i = 0; i < steps.n; i++)
			step_kill(u->a->t->job_id, steps.v[i]);
	}
	strv_free(&steps);
	kill(u->pid, SIGKILL);
	while (waitpid(u->pid, &u->ws, 0) < 0 && errno == EINTR)
		;
	u->done = true;
}

static int loop(struct run *u, struct sigloop *l)
{
	struct watch *w = u->a->watch;

	while (!u->done) {
		size_t n = w != NULL ? watch_pollfds(w) : 0;
		int timeout = w != NULL ? watch_timeout(w) : -1;

		if (u->stopping) {
			long long left = u->stop_until - mono_ms();

			if (left <= 0) {
				finish(u);
				break;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (sigloop_wait(l, w != NULL ? w->pfd : NULL, n, timeout) < 0)
			return -1;
		if (w != NULL)
			watch_events(u);
	}
	return 0;
}

int attempt_run(const struct attempt *a, struct attempt_result *r, struct err *e)
{
	struct run u = { .a = a, .r = r };
	const struct sigloop_ops ops = { .on_signal = on_signal, .on_exit = on_exit_cb,
					 .on_fd = on_fd, .arg = &u };
	struct sigloop l;
	int rv = -1;

	memset(r, 0, sizeof(*r));
	if (sigloop_start(&l, 0, &ops, e) < 0)
		return -1;
	u.pid = fork();
	if (u.pid < 0) {
		err_sys(e, EXIT_CTRUN, "fork srun");
		goto out;
	}
	if (u.pid == 0)
		exec_srun(a->argv, a->envp, &l.old);
	sigloop_add_child(&l, u.pid);
	if (loop(&u, &l) < 0) {
		err_sys(e, EXIT_CTRUN, "waiting for srun");
		kill(u.pid, SIGKILL);
		waitpid(u.pid, &u.ws, 0);
		goto out;
	}
	r->signalled = !WIFEXITED(u.ws);
	r->status = WIFEXITED(u.ws) ? WEXITSTATUS(u.ws) : 128 + WTERMSIG(u.ws);
	/* The batch ctrun's own stop: its cause is the step's status. */
	if (r->hung)
		r->status = ATTEMPT_HUNG;
	else if (r->lost.n > 0)
		r->status = ATTEMPT_LOST;
	if (r->hung || r->lost.n > 0)
		r->signalled = false;
	rv = 0;
out:
	sigloop_close(&l);
	return rv;
}

void attempt_result_free(struct attempt_result *r)
{
	strv_free(&r->lost);
	strv_free(&r->why);
}
