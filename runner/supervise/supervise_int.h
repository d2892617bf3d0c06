/* supervise_int.h - the supervisor's state, shared by supervise.c (the loop,
 * signals, fail-fast) and supsetup.c (set-up, starting a worker, tear-down).
 * Private to runner/supervise/. */
#ifndef CTRUN_SUPERVISE_INT_H
#define CTRUN_SUPERVISE_INT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <poll.h>

#include "guardian.h"
#include "output.h"
#include "heartbeat.h"
#include "sigloop.h"
#include "supervise.h"

/* After the last worker: how long silent pipes (held open by something
 * that left the process groups) may keep ctrun from returning. */
#define DRAIN_IDLE_MS 1000
/* After SIGKILL: how long to wait for the groups to empty. */
#define KILL_WAIT_MS 2000
/* With every worker gone, how often to look whether their groups emptied
 * (a grandchild reaped by its own parent sends us no SIGCHLD). */
#define GROUP_POLL_MS 50

enum phase { RUN, STOP, KILL };

struct proc {
	pid_t pid;       /* also its process group id; 0 = not started */
	bool alive;      /* not reaped yet */
	bool group_gone; /* nothing left in its process group */
};

struct sup {
	const struct worker *w;
	size_t n;
	const struct supervise_opts *o;
	struct supervise_result *r;
	const char *host;
	char hostbuf[HOST_NAME_MAX + 1];
	struct proc *p;
	int *log_fd;           /* of each worker: its --log-dir file, or -1 */
	struct out_stream *st; /* stdout, stderr of each worker; NULL when inherited */
	size_t nst;
	struct pollfd *pfd;
	size_t *pmap;          /* pfd index -> stream index */
	int wfd;               /* in pfd: the blocked output, polled to wake */
	struct out_writer out;
	struct guardian g;
	struct sigloop loop;
	int devnull, grace_ms, old_subreaper;
	struct sigaction old_pipe, old_chld;
	pid_t self;
	pid_t helper;          /* what on_first_failure started, until reaped */
	bool fg;               /* the only worker gets the terminal's foreground */
	bool aborting;         /* ctrun's own failure: deaths are ours, not failures */
	bool stuck_told;
	size_t alive;
	enum phase phase;
	long long kill_at, give_up_at, last_io;
	/* A worker's death by a stop signal ctrun has not received yet: held
	 * until that signal comes (a stop: no failure) or held_until (the
	 * first failure after all); -1: none. */
	long held;
	int held_ws;
	long long held_until;
	/* The hang watch (supervise_opts.on_progress): each worker's last
	 * progress, and room for their silences. */
	bool track;
	struct progress prog;
	long long *silent;
	bool *started;
};

/* Opens what a run needs (pipes' targets, log files, the signal loop with
 * ops, the guardian); what it made is undone by sup_teardown either way. */
int sup_setup(struct sup *s, const struct sigloop_ops *ops, struct err *e);
/* Forks worker i: its own process group, its pipes to the prefixer. */
int sup_start_worker(struct sup *s, size_t i, struct err *e);
void sup_teardown(struct sup *s);

#endif
