/* watch.h - the batch ctrun's watch over a running step: every node's
 * ctrun connects (watchproto.h), so the batch ctrun sees at once a node
 * whose connection ends without its last word (the node, its slurmd or its
 * ctrun died: the kernel closes the sockets of a killed process, and TCP
 * keepalive ends the connection of a node that went silent), and, with a
 * hang timeout, how long ago each rank last made progress.  Slurm would
 * notice a dead node only after SlurmdTimeout (300 s by default), and srun
 * waits for it that long.
 *
 * The batch ctrun listens once (any address, a port the kernel picks) and
 * tells the nodes where through WATCH_ENV; each attempt (watch_begin) names
 * the nodes it expects.  The watch owns no loop: the caller polls its
 * descriptors (watch_pollfds), hands each ready one to watch_ready and asks
 * watch_check what happened. */
#ifndef CTRUN_WATCH_H
#define CTRUN_WATCH_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"
#include "watchproto.h"

/* How long a connection may stay without a valid hello.  A node whose
 * ctrun never says hello (it cannot reach the watch: it says so) is left
 * to Slurm; the hang watch waits for every node's hello. */
#define WATCH_GREET_MS 10000

struct watch_rank {
	long rank;
	long long last; /* mono_ms of its last progress */
	bool started;   /* it made progress since it started */
};

struct watch_node;
struct watch_lost;

struct watch {
	int lfd;
	char where[96];            /* ADDR:PORT, WATCH_ENV's value */
	uint8_t key[JOBKEY_LEN];
	long attempt;
	long step;                 /* the attempt's Slurm step, as its nodes said; -1 */
	struct strv expect;        /* the attempt's nodes */
	bool *said_hello;          /* per expected node */
	struct watch_lost *lost;   /* per expected node */
	struct watch_node *c;      /* connections */
	size_t nc;
	long long start;           /* mono_ms the attempt began */
	long long hang_ms;         /* 0: no hang watch */
	long long first_ms;        /* the bound before a rank's first progress */
	struct pollfd *pfd;        /* watch_pollfds': the listener, then each connection */
	size_t pfd_cap;
};

enum watch_event {
	WATCH_EV_NONE,
	WATCH_EV_LOST,     /* a node was lost: why says which and how */
	WATCH_EV_HANG,     /* no rank made progress for hang_ms: why names the first to stall */
	WATCH_EV_ALL_DONE, /* every node said its last word */
};

/* The address the nodes reach this host at: the source address this host
 * uses towards the first of nodes that is not self (the batch script runs
 * on the job's first node; an salloc shell on a login node), else self's. */
int watch_reach_addr(const char *self, char *const *nodes, char *out, size_t size,
		     struct err *e);
/* Listens for the job's nodes on every address, a port the kernel picks;
 * w->where is addr:port.  secret: the job's (jobkey.h). */
int watch_open(struct watch *w, const char *job, const uint8_t secret[JOBKEY_LEN],
	       const char *addr, struct err *e);
void watch_close(struct watch *w);

/* A new attempt on nodes: earlier connections are closed.  hang_ms: no
 * rank made progress for that long is a hang (0: none); first_ms, the
 * same for a rank that made none yet since it started. */
int watch_begin(struct watch *w, long attempt, char *const *nodes, long long hang_ms,
		long long first_ms);

/* The descriptors to poll, in w->pfd; how many. */
size_t watch_pollfds(struct watch *w);
/* pfd[k] is ready. */
void watch_ready(struct watch *w, size_t k, short revents);
/* What happened so far, once: an event (why filled for LOST and HANG) or NONE.
 * A lost node is reported once. */
enum watch_event watch_check(struct watch *w, char *lost, size_t lsize, char *why, size_t size);
/* ms until watch_check should run again (-1: only when a descriptor is ready). */
int watch_timeout(const struct watch *w);

/* Tells every node of the attempt still connected that the batch ctrun
 * stops the step, and why (watchproto.h S). */
void watch_tell_stop(struct watch *w, const char *why);
/* Whether every expected node that said hello has said its last word or
 * is gone, and none is still to come. */
bool watch_settled(const struct watch *w);

#endif
