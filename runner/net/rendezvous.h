/* rendezvous.h - the TCP bootstrap of `ctrun check` and `ctrun bench`:
 * rank 0 listens on MASTER_PORT, every other rank connects to
 * MASTER_ADDR:MASTER_PORT, and small blobs then travel over that star
 * (gather, broadcast, scatter, allreduce of a few numbers, barrier).
 *
 * It is also the diagnosis of the classic misconfigurations: each failure
 * of rdzv_open says in one line what is wrong (port in use, port blocked,
 * world size mismatch, ...) and sets r->fail to the kind.
 *
 * Only ranks that prove they hold the job's key (struct rdzv_opts.key) take
 * part: anyone else who connects is dropped and the meeting goes on
 * (rendezvous_int.h, docs/bench.md).
 *
 * Folder runner/net/: what crosses the network between ranks: the
 * rendezvous, the socket and NCCL collectives, bus-bandwidth arithmetic, the
 * data a collective is checked with, the lobby of connections whose hello
 * is not in yet (lobby.h, also the image feed's).  May use: runner/node/, core/ (the
 * GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_RENDEZVOUS_H
#define CTRUN_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "jobkey.h"

enum rdzv_fail {
	RDZV_OK,
	RDZV_PORT_IN_USE,   /* rank 0 cannot bind MASTER_PORT */
	RDZV_PORT_BLOCKED,  /* connections refused or dropped until the timeout */
	RDZV_UNREACHABLE,   /* no route to MASTER_ADDR */
	RDZV_WORLD,         /* too few or too many ranks, or WORLD_SIZE disagrees */
	RDZV_DUP_RANK,      /* two processes claim the same RANK */
	RDZV_FOREIGN,       /* the port belongs to another job, or to something else */
	RDZV_PEER,          /* another rank failed (rank 0 reported it, or a peer vanished) */
	RDZV_SYS,           /* anything else */
};

struct rdzv_opts {
	const char *addr;  /* MASTER_ADDR, numeric or a name */
	long port;         /* MASTER_PORT */
	long rank, world;
	const char *job;   /* job tag: ranks of another job on the same port are refused */
	const uint8_t *key; /* JOBKEY_LEN bytes: the job's rendezvous key (jobkey.h) */
	const char *host;  /* this host, for messages */
	int timeout_ms;    /* how long rank 0 waits for everyone, and others try to connect */
};

struct rdzv {
	long rank, world;
	int *fds;            /* rank 0: fds[r] is rank r (fds[0] unused); else fds[0] is rank 0 */
	char local_addr[64]; /* this rank's address on the rendezvous network (numeric) */
	char job[64];        /* the job tag, for the collectives' own connections */
	uint8_t key[JOBKEY_LEN]; /* the job's rendezvous key, for them too */
	int timeout_ms;      /* how long a rank waits for another */
	enum rdzv_fail fail;
};

/* Meets every rank.  On failure returns -1 with e holding the one-line
 * diagnosis and r->fail its kind; r needs rdzv_close either way. */
int rdzv_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e);
void rdzv_close(struct rdzv *r);

/* Blobs of the same `len` on every rank.  all: world * len bytes, rank order
 * (rank 0 only for gather, every rank for allgather); scatter hands rank r
 * bytes [r*len, (r+1)*len) of rank 0's `all`. */
int rdzv_gather(struct rdzv *r, const void *mine, size_t len, void *all, struct err *e);
int rdzv_allgather(struct rdzv *r, const void *mine, size_t len, void *all, struct err *e);
int rdzv_scatter(struct rdzv *r, const void *all, size_t len, void *mine, struct err *e);
int rdzv_bcast(struct rdzv *r, void *buf, size_t len, struct err *e);

enum rdzv_op { RDZV_SUM, RDZV_MIN, RDZV_MAX };
/* Element-wise over the ranks, result on every rank. */
int rdzv_allreduce_f64(struct rdzv *r, double *v, size_t n, enum rdzv_op op, struct err *e);
int rdzv_allreduce_i64(struct rdzv *r, int64_t *v, size_t n, enum rdzv_op op, struct err *e);
int rdzv_barrier(struct rdzv *r, struct err *e);

/* Socket helpers shared with the socket collectives (MSG_NOSIGNAL, EINTR). */
int sock_send_all(int fd, const void *buf, size_t len);
int sock_recv_all(int fd, void *buf, size_t len); /* EOF: -1 with errno ECONNRESET */
/* Sends all len bytes, giving up at `deadline` (mono_ms; errno
 * ETIMEDOUT) when the peer has not taken them by then: one that stops
 * reading cannot hold the sender.  The image feed's (runner/deliver/feed_wire.c). */
int sock_send_until(int fd, const void *buf, size_t len, long long deadline);

/* Receives exactly len bytes from a socket, giving up at `deadline`
 * (mono_ms; errno ETIMEDOUT); a negative deadline waits for ever.  Also
 * the image feed's (runner/deliver/feed_wire.c). */
int rdzv_recv_until(int fd, void *buf, size_t len, long deadline);

#endif
