/* supervise.c - worker processes, signals and fail-fast (see supervise.h).
 *
 * One thread, one poll loop (core/sigloop.h): signals arrive on a signalfd
 * (nothing runs in a handler), worker output on pipes (output.c does the
 * line-atomic copying), and a guardian process (guardian.c) kills the
 * workers' process groups if ctrun itself is SIGKILLed.  Each worker leads
 * a process group, so one kill(-pgid) reaches everything it started. */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orphans.h"
#include "supervise_int.h"
#include "util.h"

int supervise_status(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return EXIT_CTRUN;
}

static const char *signame(int sig)
{
	const char *s = sigabbrev_np(sig);

	return s != NULL ? s : "?";
}

__attribute__((format(printf, 2, 3))) static void info(struct sup *s, const char *fmt, ...)
{
	va_list ap;

	if (s->o->quiet)
		return;
	va_start(ap, fmt);
	out_vinfo(&s->out, fmt, ap);
	va_end(ap);
}

static void group_gone(struct sup *s, size_t i)
{
	s->p[i].group_gone = true;
	guardian_forget(&s->g, s->p[i].pid);
}

/* ctrun's children that are neither a live worker nor a helper of its own
 * are orphans of the workers (orphans.h). */
static bool known_child(void *arg, pid_t pid)
{
	const struct sup *s = arg;

	if (pid == s->g.pid || (s->helper > 0 && pid == s->helper))
		return true;
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i].pid == pid && s->p[i].alive)
			return true;
	return false;
}

static size_t signal_orphans(struct sup *s, int sig)
{
	return orphans_signal(s->self, known_child, s, sig);
}

static void signal_groups(struct sup *s, int sig)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->p[i].pid <= 0 || s->p[i].group_gone)
			continue;
		if (kill(-s->p[i].pid, sig) < 0 && errno == ESRCH)
			group_gone(s, i);
	}
	signal_orphans(s, sig);
}

/* True when no process is left in any worker's group, nor an orphan of a
 * worker (zombies count until reaped, so this also means everything was
 * reaped). */
static bool groups_empty(struct sup *s)
{
	bool empty = true;

	for (size_t i = 0; i < s->n; i++) {
		if (s->p[i].pid <= 0 || s->p[i].group_gone)
			continue;
		if (!s->p[i].alive && kill(-s->p[i].pid, 0) < 0 && errno == ESRCH)
			group_gone(s, i);
		else
			empty = false;
	}
	return empty && signal_orphans(s, 0) == 0;
}

/* Sends sig to every group; the first call starts the grace period. */
static void begin_stop(struct sup *s, int sig)
{
	signal_groups(s, sig);
	if (s->phase == RUN) {
		s->phase = STOP;
		s->kill_at = mono_ms() + s->grace_ms;
	}
}

/* Worker i's death (ws) is the first failure: recorded, and unless a
 * signal ctrun forwarded explains it, named, the step cancelled and the
 * other workers stopped. */
static void first_failure(struct sup *s, size_t i, int ws)
{
	struct supervise_result *r = s->r;
	char how[128];

	r->failed_rank = s->w[i].rank;
	r->exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 0;
	r->term_signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	r->status = supervise_status(ws);
	/* Dying of a signal ctrun forwarded is no failure to name, and no
	 * reason to cancel the step: "received SIGTERM" said why already. */
	if (s->phase != RUN && (r->got_signal != 0 || r->hung))
		return;
	if (WIFSIGNALED(ws))
		snprintf(how, sizeof(how), "killed by signal %d (%s)", r->term_signal,
			 strsignal(r->term_signal));
	else
		snprintf(how, sizeof(how), "exited with status %d", r->exit_code);
	info(s, "ctrun: rank %ld on host %s failed first: %s", r->failed_rank, s->host, how);
	if (s->phase != RUN)
		return;
	if (s->o->on_first_failure != NULL)
		s->helper = s->o->on_first_failure(s->o->arg);
	begin_stop(s, SIGTERM);
}

/* Whether a worker killed by sig may have had it from Slurm (which signals
 * every process of a step in no fixed order) before ctrun's copy: a stop
 * signal ctrun reads (not nohup's ignored HUP), and not INT or QUIT from
 * the terminal the worker holds (those never reach ctrun). */
static bool may_be_step_signal(const struct sup *s, int sig)
{
	if (sig == SIGCHLD || sig == SIGURG || sigloop_is_checkpoint(sig) ||
	    sigismember(&s->loop.set, sig) != 1)
		return false;
	return !(s->fg && (sig == SIGINT || sig == SIGQUIT));
}

/* The held death, if any, is recorded now (first_failure: named unless
 * its signal has come). */
static void release_held(struct sup *s)
{
	size_t i = (size_t)s->held;

	if (s->held < 0)
		return;
	s->held = -1;
	first_failure(s, i, s->held_ws);
}

static void worker_exited(struct sup *s, size_t i, int ws)
{
	struct supervise_result *r = s->r;

	s->p[i].alive = false;
	s->alive--;
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return;
	/* After a peer's failure, local deaths are our own doing; after a
	 * held one, it is the first. */
	if (r->failed_rank >= 0 || r->peer_failed || s->aborting || s->held >= 0)
		return;
	/* Killed by what may be the step's stop signal before ctrun read its
	 * own: wait for that signal, at most SUPERVISE_STOP_WAIT_MS. */
	if (WIFSIGNALED(ws) && s->phase == RUN && r->got_signal == 0 &&
	    may_be_step_signal(s, WTERMSIG(ws))) {
		s->held = (long)i;
		s->held_ws = ws;
		s->held_until = mono_ms() + SUPERVISE_STOP_WAIT_MS;
		return;
	}
	first_failure(s, i, ws);
}

/* Every child is reaped (the loop's SIGLOOP_REAP_ANY). */
static void on_exit_cb(void *arg, pid_t pid, int ws)
{
	struct sup *s = arg;

	if (guardian_reaped(&s->g, pid))
		return;
	if (pid == s->helper) {
		s->helper = 0;
		return;
	}
	/* Anything else is a re-parented grandchild: reaping is all. */
	for (size_t i = 0; i < s->n; i++) {
		if (s->p[i].pid == pid && s->p[i].alive) {
			worker_exited(s, i, ws);
			break;
		}
	}
}

static void on_signal(void *arg, int sig)
{
	struct sup *s = arg;

	switch (sig) {
	case SIGUSR1:
	case SIGUSR2:
		/* Checkpoint requests (sbatch --signal): forward, carry on. */
		signal_groups(s, sig);
		info(s, "ctrun: forwarded SIG%s to the workers on host %s", signame(sig), s->host);
		return;
	case SIGURG:
		/* A peer failed and cancelled the step with SIGURG.  After a
		 * local failure it is our own cancel coming back: ignore.  A
		 * death held till now came first: the local failure. */
		release_held(s);
		if (s->r->failed_rank >= 0 || s->phase != RUN)
			return;
		s->r->peer_failed = true; /* the caller says so, once */
		begin_stop(s, SIGTERM);
		return;
	default:
		/* A worker held for dying of another signal failed of its own. */
		if (s->held >= 0 && WTERMSIG(s->held_ws) != sig)
			release_held(s);
		if (s->r->got_signal == 0) {
			s->r->got_signal = sig;
			/* From outside: before any failure, or after a worker
			 * died of this same signal (Slurm signals every process
			 * of the step, and the worker's death can be read first:
			 * held, or past the wait). */
			if (s->o->on_stop_signal != NULL && !s->r->peer_failed &&
			    (s->r->failed_rank < 0 || s->r->term_signal == sig))
				s->o->on_stop_signal(s->o->arg, sig);
			info(s, "ctrun: received SIG%s; stopping the workers on host %s", signame(sig),
			     s->host);
		}
		begin_stop(s, sig);
		/* Held for this signal: recorded as had the signal come first. */
		release_held(s);
	}
}


/* A worker's pipe is ready. */
static void on_fd(void *arg, size_t k, short revents)
{
	struct sup *s = arg;
	struct out_stream *st;
	int got;

	(void)revents;
	if (s->pfd[k].fd == s->wfd)
		return;
	st = &s->st[s->pmap[k]];
	if (s->track)
		progress_saw(&s->prog, s->pmap[k] / 2);
	/* Keep reading while data is there: a writer that sends 4 KiB at a
	 * time then costs one poll and one write per buffer, not per 4 KiB. */
	while ((got = out_stream_read(st)) > 0 && out_stream_wants_read(st))
		;
	if (got >= 0 || st->len > 0)
		s->last_io = mono_ms();
}


/* The hang watch's tick: each worker's silence to on_progress, which may
 * call them hung. */
static void tick(struct sup *s, long long now)
{
	s->prog.next_tick = now + PROGRESS_TICK_MS;
	progress_poll(&s->prog);
	for (size_t i = 0; i < s->n; i++) {
		/* A worker that ended is no worker that hangs. */
		s->silent[i] = s->p[i].alive ? progress_silent(&s->prog, i) : 0;
		s->started[i] = progress_started(&s->prog, i) || !s->p[i].alive;
	}
	if (s->o->on_progress(s->o->progress_arg, s->w, s->silent, s->started, s->n) &&
	    s->alive > 0) {
		s->r->hung = true;
		begin_stop(s, SIGTERM);
	}
}

/* One poll round; false once supervision is over. */
static bool step(struct sup *s)
{
	long long now = mono_ms(), deadline = -1;
	size_t np = 0;
	int timeout;

	if (s->held >= 0 && now >= s->held_until)
		release_held(s);
	if (s->track && s->phase == RUN && now >= s->prog.next_tick)
		tick(s, now);
	if (s->phase == STOP && now >= s->kill_at) {
		if (!groups_empty(s)) {
			info(s, "ctrun: workers on host %s still running %d ms after being told "
				"to stop; sending SIGKILL", s->host, s->grace_ms);
			signal_groups(s, SIGKILL);
		}
		s->phase = KILL;
		s->give_up_at = now + KILL_WAIT_MS;
	}
	/* A worker that outlives SIGKILL is stuck in the kernel (D state, a
	 * hung file system or driver): it can only be waited for.  Say so
	 * once, and look again now and then rather than spin. */
	if (s->phase == KILL && s->alive > 0 && now >= s->give_up_at) {
		if (!s->stuck_told)
			info(s, "ctrun: workers on host %s survive SIGKILL (stuck in the kernel?); "
				"waiting for them", s->host);
		s->stuck_told = true;
		signal_groups(s, SIGKILL);
		s->give_up_at = now + KILL_WAIT_MS;
	}
	/* Every worker exited fine, but something they started lingers. */
	if (s->alive == 0 && s->phase == RUN && s->held < 0 && !groups_empty(s))
		begin_stop(s, SIGTERM);
	/* A held death keeps ctrun waiting for its signal (phase RUN). */
	if (s->held >= 0) {
		deadline = s->held_until;
	} else if (s->alive == 0 && (groups_empty(s) || (s->phase == KILL && now >= s->give_up_at))) {
		if (out_streams_done(s->st, s->nst) && out_writer_idle(&s->out))
			return false;
		if (now >= s->last_io + DRAIN_IDLE_MS)
			return false;
		deadline = s->last_io + DRAIN_IDLE_MS;
	} else if (s->phase == STOP) {
		deadline = s->kill_at;
	} else if (s->phase == KILL) {
		deadline = s->give_up_at;
	} else if (s->track) {
		deadline = s->prog.next_tick;
	}
	for (size_t j = 0; j < s->nst; j++) {
		if (!out_stream_wants_read(&s->st[j]))
			continue;
		s->pmap[np] = j;
		s->pfd[np++] = (struct pollfd){ .fd = s->st[j].fd, .events = POLLIN };
	}
	s->wfd = out_writer_blocked_fd(&s->out);
	if (s->wfd >= 0)
		s->pfd[np++] = (struct pollfd){ .fd = s->wfd, .events = POLLOUT };
	timeout = deadline < 0 ? -1 : (int)(deadline > now ? deadline - now : 0);
	if (s->alive == 0 && s->phase != RUN && (timeout < 0 || timeout > GROUP_POLL_MS))
		timeout = GROUP_POLL_MS;
	if (sigloop_wait(&s->loop, s->pfd, np, timeout) < 0)
		return true; /* ENOMEM: try again */
	if (out_pump(&s->out, s->st, s->nst))
		s->last_io = mono_ms();
	return true;
}



int supervise_run(const struct worker *w, size_t n, const struct supervise_opts *o,
		  struct supervise_result *r, struct err *e)
{
	struct sup s = { .w = w, .n = n, .o = o, .r = r, .devnull = -1, .wfd = -1, .held = -1 };
	const struct sigloop_ops ops = { .on_signal = on_signal, .on_exit = on_exit_cb,
					 .on_fd = on_fd, .arg = &s };
	int rv = -1;

	memset(r, 0, sizeof(*r));
	r->failed_rank = -1;
	s.loop.sfd = -1;
	s.g.pid = -1;
	s.g.fd = -1;
	s.out.cur = -1;
	s.grace_ms = o->grace_ms > 0 ? o->grace_ms : 0;
	s.host = o->host;
	if (s.host == NULL) {
		if (gethostname(s.hostbuf, sizeof(s.hostbuf) - 1) < 0)
			snprintf(s.hostbuf, sizeof(s.hostbuf), "?");
		s.host = s.hostbuf;
	}
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (w[i].argv == NULL || w[i].argv[0] == NULL)
			return err_set(e, EXIT_CTRUN, "rank %ld: empty command", w[i].rank);
	if (sup_setup(&s, &ops, e) < 0)
		goto out;
	rv = 0;
	for (size_t i = 0; i < n && rv == 0; i++)
		rv = sup_start_worker(&s, i, e);
	if (rv < 0) {
		/* ctrun's own failure: take back what started. */
		s.aborting = true;
		signal_groups(&s, SIGKILL);
		s.phase = KILL;
		s.give_up_at = mono_ms() + KILL_WAIT_MS;
	}
	s.last_io = mono_ms();
	while (step(&s))
		;
	/* Silent pipes held past the last worker: flush what was read. */
	for (size_t j = 0; j < s.nst; j++)
		out_stream_close(&s.st[j]);
	out_pump(&s.out, s.st, s.nst);
	out_writer_flush(&s.out, DRAIN_IDLE_MS);
out:
	sup_teardown(&s);
	return rv;
}
