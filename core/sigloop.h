/* sigloop.h - the one signal loop: ctrun's supervisor, its container
 * watcher, the agent's shim and batch mode all wait on it.
 *
 * Signals are blocked and read from a signalfd, so nothing runs in a
 * handler (and PID 1 in a container, which loses default-action signals,
 * still gets them).  One round (sigloop_wait) polls the signalfd and the
 * caller's descriptors with a timeout, then calls back: descriptors, each
 * signal in the order it came, and for SIGCHLD the children it reaped.
 *
 * The signals ctrun passes on to what it runs are listed here once
 * (sigloop_forwarded): the stop requests TERM INT HUP QUIT and the
 * checkpoint requests USR1 USR2 (sbatch --signal). */
#ifndef CTRUN_SIGLOOP_H
#define CTRUN_SIGLOOP_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define SIGLOOP_NFORWARDED 6
extern const int sigloop_forwarded[SIGLOOP_NFORWARDED];

/* USR1 and USR2: passed on, and nothing stops. */
bool sigloop_is_checkpoint(int sig);

enum {
	SIGLOOP_URG = 1 << 0,          /* also SIGURG (a peer node failed) */
	/* A forwarded signal the caller ignores (nohup's SIGHUP) stays ignored. */
	SIGLOOP_KEEP_IGNORED = 1 << 1,
	SIGLOOP_REAP_ANY = 1 << 2,     /* reap every child, not only those added */
	/* Descriptors are called back before the signals of the same round
	 * (the watcher: a failure the agent reported counts before a stop
	 * signal that came with it). */
	SIGLOOP_FDS_FIRST = 1 << 3,
};

#define SIGLOOP_MAXKIDS 4

struct sigloop_ops {
	void (*on_signal)(void *arg, int sig);             /* any but SIGCHLD */
	void (*on_exit)(void *arg, pid_t pid, int ws);     /* a child reaped */
	void (*on_fd)(void *arg, size_t k, short revents); /* fds[k] is ready */
	void *arg;
};

struct sigloop {
	int sfd;          /* -1 until open */
	unsigned flags;
	sigset_t set;     /* what is blocked and read */
	sigset_t old;     /* the mask before: for a child to restore, and close */
	bool blocked;
	pid_t kids[SIGLOOP_MAXKIDS]; /* reaped by pid without SIGLOOP_REAP_ANY */
	struct sigloop_ops ops;
	struct pollfd *pfd;  /* the signalfd and a copy of the caller's descriptors */
	size_t cap;
};

/* Blocks SIGCHLD and the forwarded signals (with flags' choices); the old
 * mask is kept in l->old.  Cannot fail. */
void sigloop_block(struct sigloop *l, unsigned flags, const struct sigloop_ops *ops);
/* The signalfd over what sigloop_block blocked. */
int sigloop_open(struct sigloop *l, struct err *e);
/* Both; on failure nothing stays blocked. */
int sigloop_start(struct sigloop *l, unsigned flags, const struct sigloop_ops *ops,
		  struct err *e);
/* Closes the signalfd and restores the old mask (also in a forked child
 * that is not to take part). */
void sigloop_close(struct sigloop *l);

/* Reaps pid on SIGCHLD (the caller's other children are left alone); -1
 * when SIGLOOP_MAXKIDS are watched already. */
int sigloop_add_child(struct sigloop *l, pid_t pid);

/* One round: waits up to timeout_ms (-1: no limit) for a signal or one of
 * fds[0..n) (fd -1: skipped), then calls back.  fds[k].revents are set.
 * -1 on a poll error other than EINTR (callers try again or give up). */
int sigloop_wait(struct sigloop *l, struct pollfd *fds, size_t n, int timeout_ms);

/* The next signal pending, 0 if none (without calling back): what came
 * too late to handle. */
int sigloop_next(struct sigloop *l);

#endif
