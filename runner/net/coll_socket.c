/* coll_socket.c - ring and mesh collectives over TCP (see coll_socket.h).
 *
 * Every step of a ring algorithm sends one block to the next rank while
 * receiving one from the previous rank; both directions run at once in a
 * single poll loop, and received data is reduced slice by slice while the
 * rest is still arriving, so the wire stays busy. */
#include "coll_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rendezvous_int.h"

#define ADDR_LEN 80
#define STALL_MS (600 * 1000)    /* no byte moved for this long: a peer hangs */
#define REDUCE_SLICE (256 * 1024) /* reduce as this much arrives (stays in cache) */

static int fail(struct err *e, const char *what, long peer)
{
	return err_set(e, 1, "socket backend: %s rank %ld: %s", what, peer, strerror(errno));
}

static int set_nonblock(int fd)
{
	int one = 1, flags = fcntl(fd, F_GETFL);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Listens on this rank's rendezvous address, any port; "ADDR PORT". */
static int listen_here(struct sock_comm *c, char *entry, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char port[16];

	if (getaddrinfo(c->rdzv->local_addr, "0", &hints, &res) != 0)
		return err_set(e, 1, "socket backend: bad local address %s", c->rdzv->local_addr);
	c->listen_fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0 || bind(c->listen_fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(c->listen_fd, 4096) < 0 ||
	    getsockname(c->listen_fd, (struct sockaddr *)&sa, &len) < 0 ||
	    getnameinfo((struct sockaddr *)&sa, len, NULL, 0, port, sizeof(port), NI_NUMERICSERV) != 0) {
		freeaddrinfo(res);
		return err_sys(e, 1, "socket backend: listening on %s", c->rdzv->local_addr);
	}
	freeaddrinfo(res);
	memset(entry, 0, ADDR_LEN);
	snprintf(entry, ADDR_LEN, "%s %s", c->rdzv->local_addr, port);
	return 0;
}

/* How long a rank waits for a peer's connection: the rendezvous's own
 * patience (the peers are past it already), at least 10 s. */
static int accept_ms(const struct sock_comm *c)
{
	return c->rdzv->timeout_ms > 10000 ? c->rdzv->timeout_ms : 10000;
}

int sock_comm_open(struct sock_comm *c, struct rdzv *r, struct err *e)
{
	char entry[ADDR_LEN], *all = NULL, *mine = NULL;
	long n = r->world, who = -1;
	int rv = -1;

	memset(c, 0, sizeof(*c));
	c->rank = r->rank;
	c->nranks = n;
	c->rdzv = r;
	c->next_fd = c->prev_fd = c->listen_fd = -1;
	if (n == 1)
		return 0;
	if (listen_here(c, entry, e) < 0)
		return -1;
	all = calloc((size_t)n, ADDR_LEN);
	mine = calloc(1, ADDR_LEN);
	if (all == NULL || mine == NULL) {
		err_set(e, 1, "socket backend: out of memory");
		goto out;
	}
	/* Rank 0 hands each rank its ring successor's address only: n small
	 * messages, not an allgather of n^2. */
	if (rdzv_gather(r, entry, ADDR_LEN, all, e) < 0)
		goto out;
	if (r->rank == 0) {
		char *succ = calloc((size_t)n, ADDR_LEN);

		if (succ == NULL) {
			err_set(e, 1, "socket backend: out of memory");
			goto out;
		}
		for (long i = 0; i < n; i++)
			memcpy(succ + (size_t)i * ADDR_LEN, all + (size_t)((i + 1) % n) * ADDR_LEN, ADDR_LEN);
		free(all);
		all = succ;
	}
	if (rdzv_scatter(r, all, ADDR_LEN, mine, e) < 0)
		goto out;
	mine[ADDR_LEN - 1] = '\0';
	/* The successor listens already, so connecting first cannot deadlock. */
	c->next_fd = sock_connect_peer(mine, c->rdzv->job, c->rdzv->key, c->rank, e);
	if (c->next_fd < 0)
		goto out;
	c->lobby = sock_lobby_new();
	if (c->lobby == NULL) {
		err_set(e, 1, "socket backend: out of memory");
		goto out;
	}
	c->prev_fd = sock_accept_peer(c->listen_fd, c->lobby, c->rdzv->job, c->rdzv->key, accept_ms(c),
				      &who, e);
	if (c->prev_fd < 0)
		goto out;
	if (who != (c->rank + n - 1) % n) {
		err_set(e, 1, "socket backend: rank %ld connected where rank %ld was expected", who,
			(c->rank + n - 1) % n);
		goto out;
	}
	if (set_nonblock(c->next_fd) < 0 || set_nonblock(c->prev_fd) < 0) {
		err_sys(e, 1, "socket backend: ring sockets");
		goto out;
	}
	rv = 0;
out:
	free(all);
	free(mine);
	return rv;
}

/* The mesh for alltoall: everyone's address, connect upwards, accept from below. */
static int mesh_open(struct sock_comm *c, struct err *e)
{
	char entry[ADDR_LEN], *all;
	long n = c->nranks;
	int rv = -1;

	if (c->peer_fds != NULL || n == 1)
		return 0;
	all = calloc((size_t)n, ADDR_LEN);
	c->peer_fds = malloc((size_t)n * sizeof(int));
	if (all == NULL || c->peer_fds == NULL) {
		free(all);
		return err_set(e, 1, "socket backend: out of memory");
	}
	for (long i = 0; i < n; i++)
		c->peer_fds[i] = -1;
	/* The listening socket of the ring is reused: our entry is the same. */
	memset(entry, 0, sizeof(entry));
	{
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		char port[16];

		if (getsockname(c->listen_fd, (struct sockaddr *)&sa, &len) < 0 ||
		    getnameinfo((struct sockaddr *)&sa, len, NULL, 0, port, sizeof(port),
				NI_NUMERICSERV) != 0) {
			err_sys(e, 1, "socket backend: mesh address");
			goto out;
		}
		snprintf(entry, sizeof(entry), "%s %s", c->rdzv->local_addr, port);
	}
	if (rdzv_allgather(c->rdzv, entry, ADDR_LEN, all, e) < 0)
		goto out;
	for (long j = c->rank + 1; j < n; j++) {
		all[(size_t)j * ADDR_LEN + ADDR_LEN - 1] = '\0';
		c->peer_fds[j] = sock_connect_peer(all + (size_t)j * ADDR_LEN, c->rdzv->job, c->rdzv->key,
						   c->rank, e);
		if (c->peer_fds[j] < 0 || set_nonblock(c->peer_fds[j]) < 0)
			goto out;
	}
	for (long k = 0; k < c->rank; k++) {
		long who = -1;
		int fd = sock_accept_peer(c->listen_fd, c->lobby, c->rdzv->job, c->rdzv->key,
					  accept_ms(c), &who, e);

		if (fd < 0)
			goto out;
		if (who < 0 || who >= c->rank || c->peer_fds[who] >= 0) {
			close(fd);
			err_set(e, 1, "socket backend: unexpected mesh peer %ld", who);
			goto out;
		}
		c->peer_fds[who] = fd;
		if (set_nonblock(fd) < 0)
			goto out;
	}
	rv = 0;
out:
	free(all);
	return rv;
}

void sock_comm_close(struct sock_comm *c)
{
	if (c->next_fd >= 0)
		close(c->next_fd);
	if (c->prev_fd >= 0)
		close(c->prev_fd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	for (long i = 0; c->peer_fds != NULL && i < c->nranks; i++)
		if (c->peer_fds[i] >= 0)
			close(c->peer_fds[i]);
	free(c->peer_fds);
	lobby_free(c->lobby);
	free(c->scratch);
	memset(c, 0, sizeof(*c));
	c->next_fd = c->prev_fd = c->listen_fd = -1;
}

static char *scratch(struct sock_comm *c, size_t size, struct err *e)
{
	if (size > c->scratch_size) {
		char *p = realloc(c->scratch, size);

		if (p == NULL) {
			err_set(e, 1, "socket backend: out of memory (%zu bytes)", size);
			return NULL;
		}
		c->scratch = p;
		c->scratch_size = size;
	}
	return c->scratch;
}

bool sock_can_reduce(enum dtype t)
{
	return t != DT_HALF && t != DT_BFLOAT16 && t < DT_COUNT;
}

/* Integer sums in unsigned arithmetic: wraps like the GPU, no UB. */
#define SUM_LOOP(T)                                                       \
	do {                                                              \
		T *d = dst;                                               \
		const T *x = a, *y = b;                                   \
		for (size_t i = 0; i < n; i++)                            \
			d[i] = (T)(x[i] + y[i]);                          \
	} while (0)

void sock_reduce_sum(void *dst, const void *a, const void *b, size_t n, enum dtype t)
{
	switch (t) {
	case DT_INT8: case DT_UINT8: SUM_LOOP(uint8_t); break;
	case DT_INT32: case DT_UINT32: SUM_LOOP(uint32_t); break;
	case DT_INT64: case DT_UINT64: SUM_LOOP(uint64_t); break;
	case DT_FLOAT: SUM_LOOP(float); break;
	case DT_DOUBLE: SUM_LOOP(double); break;
	case DT_HALF: case DT_BFLOAT16: case DT_COUNT: break;
	}
}

/* One step: send slen bytes on sfd while receiving rlen bytes on rfd. */
struct xfer {
	int sfd;
	const char *sbuf;
	size_t slen, sdone;
	const size_t *slimit; /* forwarding: send no further than this (bytes received) */
	int rfd;
	char *rbuf;
	size_t rlen, rdone;
	/* reduction as data arrives: dst[i] = own[i] + rbuf[i] */
	char *dst;
	const char *own;
	size_t reduced;
	enum dtype type;
	long speer, rpeer;
};

static void reduce_arrived(struct xfer *x, bool all)
{
	size_t es = dtype_size(x->type), ready = x->rdone / es * es;

	if (x->dst == NULL || ready <= x->reduced || (!all && ready - x->reduced < REDUCE_SLICE))
		return;
	sock_reduce_sum(x->dst + x->reduced, x->own + x->reduced, x->rbuf + x->reduced,
			(ready - x->reduced) / es, x->type);
	x->reduced = ready;
}

static int xfer_run(struct xfer *x, struct err *e)
{
	while (x->sdone < x->slen || x->rdone < x->rlen) {
		size_t limit = x->slimit != NULL && *x->slimit < x->slen ? *x->slimit : x->slen;
		bool moved = false;

		if (x->sdone < limit) {
			ssize_t n = send(x->sfd, x->sbuf + x->sdone, limit - x->sdone,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n > 0) {
				x->sdone += (size_t)n;
				moved = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return fail(e, "sending to", x->speer);
			}
		}
		if (x->rdone < x->rlen) {
			ssize_t n = recv(x->rfd, x->rbuf + x->rdone, x->rlen - x->rdone, MSG_DONTWAIT);

			if (n > 0) {
				x->rdone += (size_t)n;
				moved = true;
				reduce_arrived(x, false);
			} else if (n == 0) {
				errno = ECONNRESET;
				return fail(e, "connection closed by", x->rpeer);
			} else if (errno != EAGAIN && errno != EINTR) {
				return fail(e, "receiving from", x->rpeer);
			}
		}
		if (!moved) {
			struct pollfd p[2];
			nfds_t np = 0;
			int ret;

			if (x->sdone < limit)
				p[np++] = (struct pollfd){ .fd = x->sfd, .events = POLLOUT };
			if (x->rdone < x->rlen) {
				if (np == 1 && p[0].fd == x->rfd)
					p[0].events |= POLLIN;
				else
					p[np++] = (struct pollfd){ .fd = x->rfd, .events = POLLIN };
			}
			ret = poll(p, np, STALL_MS);
			if (ret == 0) {
				errno = ETIMEDOUT;
				return fail(e, "no progress with", x->rdone < x->rlen ? x->rpeer : x->speer);
			}
			if (ret < 0 && errno != EINTR)
				return fail(e, "waiting for", x->rpeer);
		}
	}
	reduce_arrived(x, true);
	return 0;
}

static long ring_mod(long a, long n)
{
	return ((a % n) + n) % n;
}

int sock_all_reduce(struct sock_comm *c, const void *send, void *recv, size_t count,
		    enum dtype t, struct err *e)
{
	long n = c->nranks, r = c->rank;
	size_t es = dtype_size(t), maxchunk = (count + (size_t)n - 1) / (size_t)n;
	char *out = recv, *tmp;
	const char *in = send;

	if (n == 1) {
		if (send != recv)
			memcpy(recv, send, count * es);
		return 0;
	}
	tmp = scratch(c, maxchunk * es + 1, e);
	if (tmp == NULL)
		return -1;
#define LO(k) ((size_t)(k) * count / (size_t)n * es)
#define LEN(k) (LO((k) + 1) - LO(k))
	/* Reduce-scatter: after n-1 steps rank r holds the sum of chunk r+1. */
	for (long s = 0; s < n - 1; s++) {
		long sc = ring_mod(r - s, n), rc = ring_mod(r - s - 1, n);
		struct xfer x = { .sfd = c->next_fd, .sbuf = (s == 0 ? in : out) + LO(sc),
				  .slen = LEN(sc), .rfd = c->prev_fd, .rbuf = tmp, .rlen = LEN(rc),
				  .dst = out + LO(rc), .own = in + LO(rc), .type = t,
				  .speer = (r + 1) % n, .rpeer = ring_mod(r - 1, n) };

		if (xfer_run(&x, e) < 0)
			return -1;
	}
	/* All-gather of the reduced chunks. */
	for (long s = 0; s < n - 1; s++) {
		long sc = ring_mod(r + 1 - s, n), rc = ring_mod(r - s, n);
		struct xfer x = { .sfd = c->next_fd, .sbuf = out + LO(sc), .slen = LEN(sc),
				  .rfd = c->prev_fd, .rbuf = out + LO(rc), .rlen = LEN(rc), .type = t,
				  .speer = (r + 1) % n, .rpeer = ring_mod(r - 1, n) };

		if (xfer_run(&x, e) < 0)
			return -1;
	}
#undef LO
#undef LEN
	return 0;
}

int sock_all_gather(struct sock_comm *c, const void *send, void *recv, size_t sendcount,
		    enum dtype t, struct err *e)
{
	long n = c->nranks, r = c->rank;
	size_t bytes = sendcount * dtype_size(t);
	char *out = recv;

	if (send != out + (size_t)r * bytes)
		memcpy(out + (size_t)r * bytes, send, bytes);
	for (long s = 0; s < n - 1; s++) {
		long sb = ring_mod(r - s, n), rb = ring_mod(r - s - 1, n);
		struct xfer x = { .sfd = c->next_fd, .sbuf = out + (size_t)sb * bytes, .slen = bytes,
				  .rfd = c->prev_fd, .rbuf = out + (size_t)rb * bytes, .rlen = bytes,
				  .type = t, .speer = (r + 1) % n, .rpeer = ring_mod(r - 1, n) };

		if (xfer_run(&x, e) < 0)
			return -1;
	}
	return 0;
}

int sock_reduce_scatter(struct sock_comm *c, const void *send, void *recv, size_t recvcount,
			enum dtype t, struct err *e)
{
	long n = c->nranks, r = c->rank;
	size_t bytes = recvcount * dtype_size(t);
	const char *in = send;
	char *tmp, *acc[2];

	if (n == 1) {
		memmove(recv, send, bytes);
		return 0;
	}
	tmp = scratch(c, 3 * bytes + 1, e);
	if (tmp == NULL)
		return -1;
	acc[0] = tmp + bytes;
	acc[1] = tmp + 2 * bytes;
	/* Partial sums go to scratch (the input stays intact out of place);
	 * the last step, which completes block r, writes the output. */
	for (long s = 0; s < n - 1; s++) {
		long sb = ring_mod(r - s - 1, n), rb = ring_mod(r - s - 2, n);
		struct xfer x = { .sfd = c->next_fd,
				  .sbuf = s == 0 ? in + (size_t)sb * bytes : acc[(s - 1) % 2],
				  .slen = bytes, .rfd = c->prev_fd, .rbuf = tmp, .rlen = bytes,
				  .dst = s == n - 2 ? recv : acc[s % 2], .own = in + (size_t)rb * bytes,
				  .type = t, .speer = (r + 1) % n, .rpeer = ring_mod(r - 1, n) };

		if (xfer_run(&x, e) < 0)
			return -1;
	}
	return 0;
}

int sock_broadcast(struct sock_comm *c, const void *send, void *recv, size_t count,
		   enum dtype t, long root, struct err *e)
{
	long n = c->nranks, r = c->rank, pos = ring_mod(r - root, n);
	size_t bytes = count * dtype_size(t);
	struct xfer x = { .sfd = c->next_fd, .rfd = c->prev_fd, .type = t,
			  .speer = (r + 1) % n, .rpeer = ring_mod(r - 1, n) };

	if (pos == 0) {
		if (send != recv)
			memcpy(recv, send, bytes);
		if (n == 1)
			return 0;
		x.sbuf = send;
		x.slen = bytes;
		return xfer_run(&x, e);
	}
	/* Forward what has arrived while the rest is still coming: the ring
	 * is a pipeline, not n-1 store-and-forward hops. */
	x.rbuf = recv;
	x.rlen = bytes;
	if (pos < n - 1) {
		x.sbuf = recv;
		x.slen = bytes;
		x.slimit = &x.rdone;
	}
	return xfer_run(&x, e);
}

int sock_alltoall(struct sock_comm *c, const void *send, void *recv, size_t count,
		  enum dtype t, struct err *e)
{
	long n = c->nranks, r = c->rank;
	size_t bytes = count * dtype_size(t);
	const char *in = send;
	char *out = recv;

	if (mesh_open(c, e) < 0)
		return -1;
	/* In place, the blocks still to send would be overwritten: stage them. */
	if (send == recv) {
		char *copy = scratch(c, bytes * (size_t)n + 1, e);

		if (copy == NULL)
			return -1;
		memcpy(copy, send, bytes * (size_t)n);
		in = copy;
	}
	memcpy(out + (size_t)r * bytes, in + (size_t)r * bytes, bytes);
	for (long s = 1; s < n; s++) {
		long to = (r + s) % n, from = ring_mod(r - s, n);
		struct xfer x = { .sfd = c->peer_fds[to], .sbuf = in + (size_t)to * bytes,
				  .slen = bytes, .rfd = c->peer_fds[from],
				  .rbuf = out + (size_t)from * bytes, .rlen = bytes, .type = t,
				  .speer = to, .rpeer = from };

		if (xfer_run(&x, e) < 0)
			return -1;
	}
	return 0;
}
