/* supervise.h - runs a node's workers: fork/exec, prefixed output,
 * fail-fast, signals, no orphans.
 *
 * supervise_run owns the calling process while it runs: it blocks the
 * signals it handles (sigloop.h's forwarded ones, URG, CHLD) and reads them
 * from the signal loop's signalfd, ignores SIGPIPE, makes the process a child subreaper and
 * reaps with waitpid(-1), so the caller must have no other children it
 * wants to wait for.  Everything is restored on return.
 *
 * Folder runner/supervise/: starting and keeping workers: command
 * resolution, the supervisor, the worker from fork to exec, the output
 * prefixer, the guardian; linked into
 * ctrun and the static ctrun-agent.  May use: core/ (the GNUmakefile's
 * include paths enforce it).
 */
#ifndef CTRUN_SUPERVISE_H
#define CTRUN_SUPERVISE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include <sys/types.h>

#include "err.h"

struct worker {
	long rank;             /* global rank: output prefix and failure message */
	long local_rank;
	char **argv;           /* argv[0] already resolved to a path (see command.h) */
	char **envp;           /* full environment of the worker (NULL = ctrun's) */
	const cpu_set_t *cpus; /* NULL = inherit; else sched_setaffinity in the child */
};

struct supervise_opts {
	const char *host;    /* this node's name, for messages (NULL = gethostname) */
	bool prefix;         /* "[rankN]: " before every output line (false with --no-prefix) */
	const char *log_dir; /* NULL = none; else per-rank files log_dir/rank-N.log,
			      * unprefixed, stdout+stderr.  The directory must exist,
			      * be the caller's and writable by no one else (made and
			      * checked from "/" by the caller: core/trustdir.h) */
	bool log_only;       /* with log_dir: do not also copy output to ctrun's stdout/stderr */
	int grace_ms;        /* SIGTERM -> SIGKILL grace period (default 3000) */
	bool quiet;          /* -q: no info lines from ctrun itself */
	/* Called once, right when the first worker failure is seen, before the
	 * other workers are stopped (node mode cancels the Slurm step on other
	 * nodes).  Not called when the failure follows a signal ctrun received
	 * and forwarded.  A worker killed by a stop signal (TERM, INT, HUP,
	 * QUIT) before ctrun received any is a failure only if that same
	 * signal does not reach ctrun within SUPERVISE_STOP_WAIT_MS (Slurm
	 * signals every process of a step in no fixed order); if it does, the
	 * death is the stop's, as if the signal had come first.  May be NULL.  It must not wait: a process it starts
	 * (with the signal mask and dispositions reset) it returns, and the
	 * supervisor reaps it while it goes on draining the workers' output,
	 * giving it 5 s at the end; 0 for none. */
	pid_t (*on_first_failure)(void *arg);
	/* Called once, right when ctrun first receives a stop signal (TERM,
	 * INT, HUP, QUIT) that came from outside the job's own fail-fast: no
	 * peer failed, and no worker here failed but by that same signal.  It
	 * must not wait.  May be NULL. */
	void (*on_stop_signal)(void *arg, int sig);
	void *arg; /* for both callbacks */
	/* What the guardian runs if ctrun itself is killed (guardian.h), after
	 * it has killed the workers; NULL = nothing. */
	char *const *on_death;
	/* The hang watch (heartbeat.h): with on_progress, every
	 * PROGRESS_TICK_MS while the workers run it gets how long each has
	 * been silent (ms since its last line of output, or the last touch of
	 * its heartbeat file DIR/rank-R when heartbeat_dir is set) and whether
	 * it made any progress yet; true stops the workers as hung
	 * (supervise_result.hung, no failure named).
	 * Output is read through pipes then, even without prefix or log files. */
	const char *heartbeat_dir;
	bool (*on_progress)(void *arg, const struct worker *w, const long long *silent_ms,
			    const bool *started, size_t n);
	void *progress_arg;
};

#define SUPERVISE_GRACE_MS 3000
/* How long a worker's death by a stop signal waits for ctrun's own copy of
 * it before it counts as the first failure (see on_first_failure). */
#define SUPERVISE_STOP_WAIT_MS 1000

struct supervise_result {
	int status;       /* what ctrun should exit with: 0, or first failing worker's code
			   * (128+N if killed by signal N) */
	long failed_rank; /* -1 if none */
	int exit_code;    /* of failed_rank if it exited */
	int term_signal;  /* of failed_rank if killed, else 0 */
	int got_signal;   /* a terminating signal ctrun received and forwarded (SIGTERM...),
			   * 0 if none */
	bool peer_failed; /* supervision stopped because a peer node failed (SIGURG) */
	bool hung;        /* on_progress stopped the workers as hung */
};

/* Runs workers w[0..n-1] until every one has exited (fail-fast: the first
 * failure stops the others), then returns 0 with r filled.  Returns -1
 * with e (EXIT_CTRUN) only for ctrun's own failures (fork, pipe, log dir);
 * workers already started are killed and reaped first. */
int supervise_run(const struct worker *w, size_t n, const struct supervise_opts *o,
		  struct supervise_result *r, struct err *e);

/* Exit status of a wait status: the code, or 128+N for signal N. */
int supervise_status(int wstatus);

#endif
