/* agentwatch.c - a container run, watched (see agentwatch.h).
 *
 * ctrun and the agent talk through two FIFOs in the run directory
 * (runner/agent/agentproto.h): the agent's first worker failure makes
 * ctrun cancel the Slurm step at once, like launch.c does for workers of
 * its own; a peer's failure (SIGURG) goes to the agent as a message. */
#include "agentwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentproto.h"
#include "batchstop.h"
#include "hangwatch.h"
#include "phase.h"
#include "runtime.h"
#include "sigloop.h"
#include "step.h"
#include "util.h"

struct watch {
	const struct topo *t;
	bool cancel;         /* ours to cancel the step on a failure here */
	int efd, cfd;        /* the events and control FIFOs */
	struct sigloop loop;
	struct agentproto_reader rd;
	pid_t pid;
	int status;          /* the runtime's, once reaped (-1 before) */
	bool started;        /* the agent said 'S' */
	bool ended;          /* the agent's supervisor said 'E': it reported its end */
	bool cancelled;      /* we cancelled our own Slurm step */
	pid_t helper;        /* that scancel, until reaped */
	long failed_rank;
	int failed_signal;   /* that rank was killed by it (0: it exited) */
	int got_signal;
	bool peer_failed;
	/* --hang-timeout: the agent's reports of its workers' silences */
	struct hangwatch hw;
	long *ranks;
	long long *silent;
	bool *begun;         /* each worker made progress since it started */
	size_t reported;     /* this tick's reports so far */
	bool hung;           /* judged here: the agent was told to stop them */
};

/* The agent's first failure report: end the step on every node now. */
static void agent_failed(struct watch *w, const struct agent_msg *m)
{
	if (w->failed_rank >= 0)
		return;
	w->failed_rank = m->rank;
	w->failed_signal = m->sig;
	if (w->cancel && !w->peer_failed && w->got_signal == 0 && !w->cancelled) {
		w->cancelled = true;
		w->helper = step_cancel_start(w->t);
		if (w->helper > 0)
			sigloop_add_child(&w->loop, w->helper);
	}
}

/* One worker's silence (P): a tick is whole when every worker's came. */
static void progress(struct watch *w, const struct agent_msg *m)
{
	const struct agent_msg stop = { .kind = AGENT_MSG_PEER_FAILED };
	long i = m->rank - w->t->rank_base;

	if (w->ranks == NULL || i < 0 || i >= w->t->nproc)
		return;
	w->silent[i] = m->ms;
	w->begun[i] = m->started;
	if (++w->reported < (size_t)w->t->nproc)
		return;
	w->reported = 0;
	if (hangwatch_tick(&w->hw, w->ranks, w->silent, w->begun, (size_t)w->t->nproc) &&
	    !w->hung &&
	    !w->peer_failed && w->failed_rank < 0) {
		w->hung = true;
		if (agentproto_send(w->cfd, &stop) < 0)
			kill(w->pid, SIGTERM);
	}
}

static void events(struct watch *w)
{
	char buf[256];
	ssize_t n;

	while ((n = read(w->efd, buf, sizeof(buf))) > 0) {
		for (size_t off = 0; off < (size_t)n;) {
			struct agent_msg m;

			off += agentproto_feed(&w->rd, buf + off, (size_t)n - off, &m);
			if (m.kind == AGENT_MSG_STARTED) {
				w->started = true;
				phase_mark("container start");
			} else if (m.kind == AGENT_MSG_ENDED) {
				w->ended = true;
			} else if (m.kind == AGENT_MSG_FAILED) {
				agent_failed(w, &m);
			} else if (m.kind == AGENT_MSG_PROGRESS) {
				progress(w, &m);
			}
		}
	}
}

static void on_events(void *arg, size_t k, short revents)
{
	(void)k;
	if (revents & POLLIN)
		events(arg);
}

static void on_exit_cb(void *arg, pid_t pid, int ws)
{
	struct watch *w = arg;

	if (pid == w->helper)
		w->helper = 0;
	else if (pid == w->pid)
		w->status = supervise_status(ws);
}

static void on_signal(void *arg, int sig)
{
	struct watch *w = arg;
	const struct agent_msg peer = { .kind = AGENT_MSG_PEER_FAILED };

	if (sig == SIGURG) {
		/* Our own cancel coming back, or a peer's: tell the agent. */
		if (!w->cancelled && w->failed_rank < 0 && !w->peer_failed) {
			w->peer_failed = true;
			if (agentproto_send(w->cfd, &peer) < 0)
				kill(w->pid, SIGTERM);
		}
		return;
	}
	kill(w->pid, sig);
	if (sigloop_is_checkpoint(sig) || w->got_signal != 0)
		return;
	w->got_signal = sig;
	/* From outside, not our fail-fast (as supervise.h on_stop_signal):
	 * the batch ctrun must know. */
	if (!w->peer_failed && (w->failed_rank < 0 || w->failed_signal == sig))
		batchstop_note(sig, w->t->host);
}

/* The container ended without its agent's report: nobody inside could say
 * why, so ctrun does (the agent's own errors are printed by the agent). */
static void lost_agent(const struct ctr_setup *c, const struct topo *t, int status)
{
	char how[96];

	if (status > 128 && status < 128 + NSIG)
		snprintf(how, sizeof(how), "killed by signal %d (%s)", status - 128,
			 sigabbrev_np(status - 128) != NULL ? sigabbrev_np(status - 128) : "?");
	else
		snprintf(how, sizeof(how), "status %d", status);
	fprintf(stderr, "ctrun: the container on host %s ended (%s) before its agent reported "
		"the workers' end: the agent or %s was killed; see the node's kernel log for "
		"the out-of-memory killer\n", t->host, how, c->spec.bin);
}

/* What the runtime's run told: into r, or an error when it failed before
 * the container started. */
static int watch_result(const struct watch *w, const struct ctr_setup *c,
			struct supervise_result *r, struct err *e)
{
	if (!w->started && w->status != 0) {
		if (w->got_signal == 0)
			return err_set(e, EXIT_CTRUN, "%s exited with status %d before the container "
				       "started (see its message above)", c->spec.bin, w->status);
		r->status = 128 + w->got_signal;
		r->got_signal = w->got_signal;
		return 0;
	}
	if (w->status != 0 && !w->ended && w->got_signal == 0 && !w->peer_failed)
		lost_agent(c, w->t, w->status);
	r->status = w->status;
	r->failed_rank = w->failed_rank;
	r->got_signal = w->got_signal;
	r->peer_failed = w->peer_failed && w->failed_rank < 0;
	r->hung = w->hung;
	return 0;
}

static int open_fifo(const struct ctr_setup *c, const char *name, int *fd, struct err *e)
{
	char path[PATH_MAX];

	if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, name) < 0 ||
	    (*fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		return err_sys(e, EXIT_CTRUN, "FIFO %s", path);
	return 0;
}

/* Starts the runtime and watches it: the agent's events (core/sigloop.h
 * with the events first in each round), signals passed on to the
 * runtime, SIGURG to the agent as 'U'. */
int ctr_watch(const struct ctr_setup *c, const struct ctr_plan *p, const struct ctr_round *rd,
		 struct supervise_result *r, struct err *e)
{
	/* Other nodes' workers are in the step: a failure here cancels it. */
	struct watch w = { .t = rd->t, .efd = -1, .cfd = -1, .pid = -1, .status = -1,
			   .failed_rank = -1,
			   .cancel = rd->t->step_id != NULL && rd->t->world_size > rd->t->nproc };
	const struct sigloop_ops ops = { .on_signal = on_signal, .on_exit = on_exit_cb,
					 .on_fd = on_events, .arg = &w };
	int rv = -1;

	hangwatch_init(&w.hw, rd->o, rd->t);
	if (w.hw.on) {
		w.ranks = calloc((size_t)rd->t->nproc, sizeof(*w.ranks));
		w.silent = calloc((size_t)rd->t->nproc, sizeof(*w.silent));
		w.begun = calloc((size_t)rd->t->nproc, sizeof(*w.begun));
		if (w.ranks == NULL || w.silent == NULL || w.begun == NULL) {
			err_sys(e, EXIT_CTRUN, "hang watch");
			goto out;
		}
		for (long i = 0; i < rd->t->nproc; i++)
			w.ranks[i] = rd->t->rank_base + i;
	}
	if (open_fifo(c, "events", &w.efd, e) < 0 || open_fifo(c, "control", &w.cfd, e) < 0)
		goto out;
	if (sigloop_start(&w.loop, SIGLOOP_URG | SIGLOOP_KEEP_IGNORED | SIGLOOP_FDS_FIRST, &ops,
			  e) < 0)
		goto out;
	phase_mark("setup");
	w.pid = ctr_plan_spawn(&c->spec, p, rd->envp, e);
	if (w.pid < 0)
		goto restore;
	sigloop_add_child(&w.loop, w.pid);
	while (w.status < 0) {
		struct pollfd pfd = { .fd = w.efd, .events = POLLIN };

		if (sigloop_wait(&w.loop, &pfd, 1, -1) < 0)
			break;
	}
	events(&w);
	phase_mark("workers");
	step_helper_finish(w.helper);
	rv = watch_result(&w, c, r, e);
restore:
	sigloop_close(&w.loop);
out:
	free(w.ranks);
	free(w.silent);
	free(w.begun);
	if (w.efd >= 0)
		close(w.efd);
	if (w.cfd >= 0)
		close(w.cfd);
	return rv;
}

