/* coll_socket.h - collectives over plain TCP, for CPU-only nodes and to
 * measure the raw network: a ring (each rank sends to rank+1 and receives
 * from rank-1, both at once) for all_reduce (reduce-scatter then
 * all-gather), all_gather, reduce_scatter and a pipelined broadcast; a
 * full mesh, built on first use, for alltoall.  Sums are element-wise in
 * the buffer's type (integers wrap, as on a GPU). */
#ifndef CTRUN_COLL_SOCKET_H
#define CTRUN_COLL_SOCKET_H

#include <stddef.h>

#include "busbw.h"
#include "err.h"
#include "lobby.h"
#include "rendezvous.h"

struct sock_comm {
	long rank, nranks;
	int next_fd, prev_fd; /* ring: send to rank+1, receive from rank-1 */
	int *peer_fds;        /* mesh (alltoall), NULL until needed */
	int listen_fd;
	struct rdzv *rdzv;    /* to exchange addresses */
	struct lobby *lobby;  /* connections on listen_fd not yet proven (lobby.h) */
	char *scratch;        /* reduction and in-place staging */
	size_t scratch_size;
};

/* Builds the ring among the ranks of `r` (over the rendezvous network). */
int sock_comm_open(struct sock_comm *c, struct rdzv *r, struct err *e);
void sock_comm_close(struct sock_comm *c);

/* nccl semantics and argument order; send == recv (or the in-place
 * offsets of busbw.h) is in-place.  Sums only; 16-bit floats are not
 * reduced here (sock_can_reduce). */
bool sock_can_reduce(enum dtype t);
int sock_all_reduce(struct sock_comm *c, const void *send, void *recv, size_t count,
		    enum dtype t, struct err *e);
int sock_all_gather(struct sock_comm *c, const void *send, void *recv, size_t sendcount,
		    enum dtype t, struct err *e);
int sock_reduce_scatter(struct sock_comm *c, const void *send, void *recv, size_t recvcount,
			enum dtype t, struct err *e);
int sock_broadcast(struct sock_comm *c, const void *send, void *recv, size_t count,
		   enum dtype t, long root, struct err *e);
int sock_alltoall(struct sock_comm *c, const void *send, void *recv, size_t count,
		  enum dtype t, struct err *e);

/* The collectives' own connections (sock_peer.c): connect to "ADDR PORT"
 * and say who we are (rank, job tag, a MAC with the job's key); accept the
 * first connection that says it is a rank of `job` and proves it with
 * `key`, for at most timeout_ms.  *who = its rank.  Connections not yet
 * proven wait in a lobby that outlives the call (the next accept on the
 * same socket finds a peer that arrived meanwhile): each has
 * SOCK_HELLO_MS, at most LOBBY_MAX wait at once and a newcomer takes the
 * oldest one's place, so strangers flooding the port neither keep a peer
 * out nor stall the accept; whatever fails the proof is closed (lobby.h;
 * lobby_free frees one). */
#define SOCK_HELLO_MS 2000 /* a connection that says nothing in this long is a stranger */
struct lobby *sock_lobby_new(void);
int sock_connect_peer(const char *entry, const char *job, const uint8_t *key, long me,
		      struct err *e);
int sock_accept_peer(int listen_fd, struct lobby *l, const char *job, const uint8_t *key,
		     int timeout_ms, long *who, struct err *e);

/* dst[i] = a[i] + b[i] over n elements of type t (dst may be a). */
void sock_reduce_sum(void *dst, const void *a, const void *b, size_t n, enum dtype t);

#endif
