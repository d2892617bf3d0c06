/* sphold.h - `ctrun __hold`, the container of one node and step, seen
 * from slurmstepd: started as the job's user, its hold message received
 * (runner/agent/holdmsg.h), stopped after the node's last task.
 *
 * slurmstepd stays safe: nothing here exits or aborts; every failure is
 * -1 with e, and ctrun's own words are kept in an in-memory log (its
 * stderr, the entrypoint's output) for the tasks to print.
 *
 * "The hold" is the tree's word for that process: it holds the step's
 * container open on the node for the tasks to join (runner/cmd_hold.c,
 * the agent's hold mode).  It has nothing to do with the image holder
 * (runner/container/holder.h), the process that keeps an image mounted. */
#ifndef CTRUN_SPHOLD_H
#define CTRUN_SPHOLD_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "holdmsg.h"
#include "strv.h"

struct sp_hold {
	pid_t pid;            /* ctrun __hold, -1 = none */
	pid_t killed;         /* the one sp_hold_stop saw not end by itself, -1 = none */
	long agent;           /* the holding agent (the node's pid), -1 = none */
	int pidfd;            /* its pidfd (its end, whoever reaps it), -1 = none */
	int sock;             /* our end of its descriptor 0; closing it ends the hold */
	int log;              /* memfd: ctrun's stderr and the entrypoint's output */
	int fds[HOLD_NFDS];   /* the container's root and namespaces (/proc/PID of the
			       * holding agent), -1 = absent */
	char *cwd;            /* its working directory in the container */
	struct strv env;      /* its environment */
};

/* Who ctrun runs as: the job's user, with the job's groups. */
struct sp_user {
	uid_t uid;
	gid_t gid;
	const gid_t *gids;
	int ngids;
};

void sp_hold_init(struct sp_hold *h);

/* Forks and execs argv (ctrun __hold ...) as u with environment envp,
 * in the current directory, then waits for its hold message.  -1 with e
 * when it could not start or ended without a message (its words are in
 * the log then: sp_hold_log). */
int sp_hold_start(struct sp_hold *h, char *const *argv, char *const *envp,
		  const struct sp_user *u, struct err *e);

/* Opens /proc/PID/root and /proc/PID/ns/ of a holding agent into h->fds
 * (a container another step holds: sprunning.h). */
int sp_hold_open(struct sp_hold *h, long pid, struct err *e);

/* Calls fn with each line ctrun wrote (at most the last 64 KiB). */
void sp_hold_log(const struct sp_hold *h, void (*fn)(const char *line, void *arg), void *arg);

/* Ends the hold: closes the socket, waits up to timeout_s seconds for
 * ctrun to remove what it made and exit, else kills its process group.
 * Returns ctrun's exit status, or -1 when it was killed or not there. */
int sp_hold_stop(struct sp_hold *h, int timeout_s);

/* After sp_hold_stop, when ctrun did not end by itself (a signal,
 * Slurm's process tracking, the timeout): `ctrun __hold` again as u with
 * env plus CTRUN_HOLD_REAP=PID, which removes the dead hold's run
 * directory (never following a link; only when that process is gone)
 * and nothing else.  Waits up to 10 s; its words go to the log. */
void sp_hold_reap(struct sp_hold *h, const char *ctrun, struct strv *env,
		  const struct sp_user *u);

/* Closes every descriptor and frees (after sp_hold_stop). */
void sp_hold_free(struct sp_hold *h);

#endif
