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

/* After the nodes of a stopped step have ended: their last lines' time to
 * come through srun before it is killed. */
#define ATTEMPT_FLUSH_MS 500
/* A node's ctrun gone without its last word is a lost node only if srun
 * still waits for it this much later: srun waits for a dead node's tasks
 * until Slurm notices, while a ctrun that Slurm itself killed (srun
 * --kill-on-bad-exit's SIGKILL after KillWait, a launch that failed
 * elsewhere) leaves srun nothing to wait for, and srun ends. */
#define ATTEMPT_LOSS_MS 1500

struct suspect {
	char host[WATCH_HOST_MAX];
	char why[512];
	long long since;
};

struct run {
	const struct attempt *a;
	struct attempt_result *r;
	pid_t pid;
	int ws;
	bool done;           /* srun reaped */
	bool stopping;       /* the batch ctrun stopped the step */
	bool settled;        /* and every node has ended since */
	long long stop_until;
	struct suspect *sus; /* nodes gone without a word, not yet lost */
	size_t nsus;
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

/* scancel (sig 0: the step cancelled, else the signal) to the attempt's
 * own step (its nodes said which), else to every step of the job, without
 * waiting: with a dead node in the step scancel waits MessageTimeout. */
static void scancel_attempt(struct run *u, int sig)
{
	struct strv steps = { 0 };
	char step[32];

	if (u->a->watch != NULL && u->a->watch->step >= 0) {
		snprintf(step, sizeof(step), "%ld", u->a->watch->step);
		step_helper_keep(step_scancel_start(u->a->t->job_id, step, sig));
	} else if (job_steps(u->a->t->job_id, &steps) == 0) {
		for (size_t i = 0; i < steps.n; i++)
			step_helper_keep(step_scancel_start(u->a->t->job_id, steps.v[i], sig));
	}
	strv_free(&steps);
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
	scancel_attempt(u, SIGURG);
}

/* The suspects that srun still waits for after ATTEMPT_LOSS_MS (all of
 * them with now_all, when srun is about to be killed) are lost: named in
 * one line each. */
static void confirm_lost(struct run *u, bool now_all)
{
	long long now = mono_ms();
	size_t kept = 0;

	for (size_t i = 0; i < u->nsus; i++) {
		struct suspect *s = &u->sus[i];

		if (!now_all && now - s->since < ATTEMPT_LOSS_MS) {
			u->sus[kept++] = *s;
			continue;
		}
		if (strv_push(&u->r->lost, s->host) < 0 || strv_push(&u->r->why, s->why) < 0)
			continue;
		if (!u->a->quiet)
			fprintf(stderr, "ctrun: node %s left out: lost during the step: %s\n",
				s->host, s->why);
	}
	u->nsus = kept;
}

static void suspect(struct run *u, const char *host, const char *why)
{
	struct suspect *grown = realloc(u->sus, (u->nsus + 1) * sizeof(*grown));

	if (grown == NULL)
		return;
	u->sus = grown;
	grown = &u->sus[u->nsus++];
	snprintf(grown->host, sizeof(grown->host), "%s", host);
	snprintf(grown->why, sizeof(grown->why), "%s", why);
	grown->since = mono_ms();
}

/* What the watch saw since the last round. */
static void watch_events(struct run *u)
{
	char host[WATCH_HOST_MAX], why[1024], stop[WATCH_WHY_MAX];
	enum watch_event ev;

	while ((ev = watch_check(u->a->watch, host, sizeof(host), why, sizeof(why))) ==
	       WATCH_EV_LOST || ev == WATCH_EV_HANG) {
		if (ev == WATCH_EV_LOST) {
			/* Stopped at once: the other nodes' workers would wait
			 * for it; lost once srun is seen to wait for it too. */
			u->r->silent_end = true;
			suspect(u, host, why);
			snprintf(stop, sizeof(stop), "node %s went away", host);
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
	/* Stopped and every node has ended: srun may still wait for a dead one.
	 * A moment first for the nodes' last lines, which come through srun,
	 * and to tell a dead node from a ctrun Slurm killed (the suspects). */
	if (ev == WATCH_EV_ALL_DONE && u->stopping && !u->settled) {
		long long until = mono_ms() + ATTEMPT_FLUSH_MS;

		u->settled = true;
		for (size_t i = 0; i < u->nsus; i++)
			if (u->sus[i].since + ATTEMPT_LOSS_MS > until)
				until = u->sus[i].since + ATTEMPT_LOSS_MS;
		if (u->stop_until > until)
			u->stop_until = until;
	}
	confirm_lost(u, false);
}

/* srun did not end by itself: its step is cancelled and srun killed. */
static void finish(struct run *u)
{
	confirm_lost(u, true);
	scancel_attempt(u, 0);
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
		step_helpers_reap(0);
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
	/* A suspect srun did not wait for is no lost node. */
	free(u.sus);
	sigloop_close(&l);
	return rv;
}

void attempt_result_free(struct attempt_result *r)
{
	strv_free(&r->lost);
	strv_free(&r->why);
}
