/* rendezvous.c - rank 0 listens on MASTER_PORT, the others connect; then
 * small blobs over that star.  Every way the meeting can fail becomes one
 * line that says what is misconfigured (see rendezvous.h). */
#include "rendezvous.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rendezvous_int.h"

/* One non-blocking connect attempt, at most `ms`; 0 or -1 with errno. */
static int try_connect(const struct addrinfo *ai, int ms)
{
	struct pollfd pfd;
	int fd, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
		goto fail;
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, ms) <= 0) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		goto fail;
	if (err != 0) {
		errno = err;
		goto fail;
	}
	/* A port in the ephemeral range with nobody listening can "accept"
	 * a connection from itself (TCP simultaneous open): not rank 0. */
	{
		struct sockaddr_storage me, peer;
		socklen_t a = sizeof(me), b = sizeof(peer);

		if (getsockname(fd, (struct sockaddr *)&me, &a) == 0 &&
		    getpeername(fd, (struct sockaddr *)&peer, &b) == 0 && a == b &&
		    memcmp(&me, &peer, a) == 0) {
			errno = ECONNREFUSED;
			goto fail;
		}
	}
	if (fcntl(fd, F_SETFL, 0) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* Connects to rank 0 until the deadline; the fd, or -1 with errno of the
 * last attempt in *last. */
static int connect_root(const struct addrinfo *res, long deadline, int *last)
{
	int fd = -1;

	/* Rank 0 may start later than us: retry until the timeout, and
	 * remember how the last attempt failed for the diagnosis. */
	while (fd < 0 && rdzv_now_ms() < deadline) {
		long left = deadline - rdzv_now_ms();

		fd = try_connect(res, (int)(left < 2000 ? left : 2000));
		if (fd >= 0)
			break;
		*last = errno;
		if (*last != ETIMEDOUT) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return fd;
}

static int connect_fail(struct rdzv *r, const struct rdzv_opts *o, int last, struct err *e)
{
	int secs = o->timeout_ms / 1000;

	if (last == ECONNREFUSED)
		return rdzv_fail_set(r, e, RDZV_PORT_BLOCKED, "port blocked or not listening: %s:%ld "
			    "refused connections from %s for %ds (rank 0 is not listening there: "
			    "it failed, or MASTER_ADDR is not rank 0's host, or a firewall rejects "
			    "the port)", o->addr, o->port, o->host, secs);
	if (last == ETIMEDOUT)
		return rdzv_fail_set(r, e, RDZV_PORT_BLOCKED, "port blocked: connecting from %s to %s:%ld "
			    "timed out for %ds (a firewall drops the port, or MASTER_ADDR is not "
			    "reachable from here)", o->host, o->addr, o->port, secs);
	if (last == EHOSTUNREACH || last == ENETUNREACH)
		return rdzv_fail_set(r, e, RDZV_UNREACHABLE, "no route from %s to MASTER_ADDR %s: %s "
			    "(wrong interface or address)", o->host, o->addr, strerror(last));
	return rdzv_fail_set(r, e, RDZV_SYS, "connecting from %s to %s:%ld: %s", o->host, o->addr,
		    o->port, strerror(last));
}

/* The first bytes of rank 0's reply: the magic of this version of ctrun's
 * rendezvous, or a diagnosis. */
static int reply_magic(struct rdzv *r, const struct rdzv_opts *o, const struct reply_head *hd,
		       struct err *e)
{
	if (memcmp(hd->magic, MAGIC, MAGIC_NAME_LEN) == 0 && hd->magic[MAGIC_NAME_LEN] != MAGIC[MAGIC_NAME_LEN])
		return rdzv_fail_set(r, e, RDZV_PEER, "rank 0 at %s:%ld runs another version of ctrun "
			    "(rendezvous protocol %c, this rank speaks %c): use the same ctrun on "
			    "every node", o->addr, o->port, hd->magic[MAGIC_NAME_LEN], MAGIC[MAGIC_NAME_LEN]);
	if (memcmp(hd->magic, MAGIC, 8) != 0)
		return rdzv_fail_set(r, e, RDZV_FOREIGN, "%s:%ld answered, but not as ctrun's rank 0 (another "
			    "service on MASTER_PORT?)", o->addr, o->port);
	return 0;
}

/* A status after its head: the rest, then the verdict it carries. */
static int read_status(struct rdzv *r, const struct rdzv_opts *o, int fd, const struct reply_head *hd,
		       long deadline, struct err *e)
{
	struct status s;
	enum rdzv_fail kind = (enum rdzv_fail)ntohl(hd->kind);

	if (rdzv_recv_until(fd, s.msg, sizeof(s.msg), deadline) < 0)
		return rdzv_fail_set(r, e, RDZV_PEER, "rank 0 closed the rendezvous at %s:%ld", o->addr,
			    o->port);
	s.msg[sizeof(s.msg) - 1] = '\0';
	/* Rank 0 prints its own diagnosis; a foreign job's rank must print
	 * the refusal itself, rank 0 did not fail over it. */
	if (kind == RDZV_FOREIGN)
		return rdzv_fail_set(r, e, RDZV_FOREIGN, "%s", s.msg);
	if (kind != RDZV_OK)
		return rdzv_fail_set(r, e, RDZV_PEER, "rank 0: %s", s.msg);
	return 0;
}

/* One handshake with rank 0 on fd (rendezvous_int.h): 0 admitted, 1 rank 0
 * closed before its challenge (its queue of unproven connections was full:
 * connect again), -1 failed with e set. */
static int handshake(struct rdzv *r, const struct rdzv_opts *o, int fd, long deadline, struct err *e)
{
	struct hello h = { .rank = htonl((uint32_t)o->rank), .world = htonl((uint32_t)o->world) };
	struct challenge c;
	uint8_t mac[JOBKEY_LEN];

	memcpy(h.magic, MAGIC, 8);
	rdzv_copy_str(h.job, sizeof(h.job), o->job);
	rdzv_copy_str(h.host, sizeof(h.host), o->host);
	if (jobkey_random(h.nonce, sizeof(h.nonce), e) < 0) {
		r->fail = RDZV_SYS;
		return -1;
	}
	rdzv_hello_mac(o->key, &h, h.mac);
	if (sock_send_all(fd, &h, sizeof(h)) < 0)
		return errno == EPIPE || errno == ECONNRESET ? 1
			: rdzv_fail_set(r, e, RDZV_PEER, "rendezvous at %s:%ld: %s", o->addr, o->port,
					strerror(errno));
	/* Rank 0 challenges at once, or answers another job's rank or
	 * another version at once (a status). */
	if (rdzv_recv_until(fd, &c.head, sizeof(c.head), deadline) < 0) {
		if (errno == ETIMEDOUT)
			return rdzv_fail_set(r, e, RDZV_FOREIGN, "%s:%ld accepted the connection but never "
				    "answered as ctrun's rank 0 (another service on MASTER_PORT?)",
				    o->addr, o->port);
		return 1;
	}
	if (reply_magic(r, o, &c.head, e) < 0)
		return -1;
	if (ntohl(c.head.kind) != RDZV_KIND_CHALLENGE)
		return read_status(r, o, fd, &c.head, deadline, e) < 0 ? -1
			: rdzv_fail_set(r, e, RDZV_PEER, "rank 0 at %s:%ld admitted this rank without "
					"a challenge", o->addr, o->port);
	if (rdzv_recv_until(fd, c.nonce, sizeof(c) - sizeof(c.head), deadline) < 0)
		return 1;
	rdzv_auth_mac(o->key, "root", &h, c.nonce, mac);
	if (!jobkey_equal(mac, c.mac))
		return rdzv_fail_set(r, e, RDZV_FOREIGN, "%s:%ld answered as ctrun's rank 0 of job %s but "
			    "does not hold this job's key (another user's job on MASTER_PORT, or the "
			    "nodes do not share ~/.config/ctrun/job.key or " JOBKEY_SECRET_ENV ": see "
			    "docs/bench.md)", o->addr, o->port, o->job);
	rdzv_auth_mac(o->key, "rank", &h, c.nonce, mac);
	if (sock_send_all(fd, mac, sizeof(mac)) < 0)
		return rdzv_fail_set(r, e, RDZV_PEER, "rank 0 closed the rendezvous at %s:%ld", o->addr,
			    o->port);
	return 0;
}

static int peer_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct reply_head hd;
	long deadline = rdzv_now_ms() + o->timeout_ms;
	char port[16];
	int fd = -1, last = 0, ret;

	snprintf(port, sizeof(port), "%ld", o->port);
	ret = getaddrinfo(o->addr, port, &hints, &res);
	if (ret != 0)
		return rdzv_fail_set(r, e, RDZV_UNREACHABLE, "MASTER_ADDR '%s' does not resolve on %s: %s",
			    o->addr, o->host, gai_strerror(ret));
	for (;;) {
		fd = connect_root(res, deadline, &last);
		if (fd < 0)
			break;
		rdzv_tune(fd);
		/* Rank 0 challenges within HELLO_TIMEOUT_MS of accepting. */
		ret = handshake(r, o, fd, rdzv_now_ms() + HELLO_TIMEOUT_MS + 5000, e);
		if (ret <= 0)
			break;
		close(fd);
		fd = -1;
		last = ECONNRESET;
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	}
	freeaddrinfo(res);
	if (fd < 0)
		return connect_fail(r, o, last, e);
	r->fds[0] = fd;
	if (ret < 0)
		return -1;
	/* Rank 0 answers when everyone is there, at most its own timeout
	 * after it started: allow for it starting up to that much later. */
	if (rdzv_recv_until(fd, &hd, sizeof(hd), rdzv_now_ms() + 2L * o->timeout_ms + 10000) < 0)
		return rdzv_fail_set(r, e, RDZV_PEER, "rank 0 closed the rendezvous at %s:%ld", o->addr,
			    o->port);
	if (reply_magic(r, o, &hd, e) < 0 ||
	    read_status(r, o, fd, &hd, rdzv_now_ms() + 10000, e) < 0)
		return -1;
	{
		struct sockaddr_storage me;
		socklen_t len = sizeof(me);

		if (getsockname(fd, (struct sockaddr *)&me, &len) == 0)
			getnameinfo((struct sockaddr *)&me, len, r->local_addr, sizeof(r->local_addr),
				    NULL, 0, NI_NUMERICHOST);
	}
	return 0;
}

int rdzv_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e)
{
	struct rlimit nofile;

	/* Rank 0 holds a socket per rank, the alltoall mesh one per peer:
	 * the default soft limit of 1024 is too low for a large job. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	memset(r, 0, sizeof(*r));
	r->rank = o->rank;
	r->world = o->world;
	rdzv_copy_str(r->local_addr, sizeof(r->local_addr), "127.0.0.1");
	rdzv_copy_str(r->job, sizeof(r->job), o->job);
	if (o->key == NULL)
		return rdzv_fail_set(r, e, RDZV_SYS, "rendezvous: no job key (ctrun passes it to its "
			    "workers in " JOBKEY_RDZV_ENV ")");
	memcpy(r->key, o->key, JOBKEY_LEN);
	r->timeout_ms = o->timeout_ms;
	if (o->world < 1 || o->rank < 0 || o->rank >= o->world)
		return rdzv_fail_set(r, e, RDZV_WORLD, "RANK=%ld is not below WORLD_SIZE=%ld on %s", o->rank,
			    o->world, o->host);
	r->fds = malloc((size_t)o->world * sizeof(*r->fds));
	if (r->fds == NULL)
		return rdzv_fail_set(r, e, RDZV_SYS, "rendezvous: out of memory");
	for (long i = 0; i < o->world; i++)
		r->fds[i] = -1;
	if (o->world == 1)
		return 0;
	return o->rank == 0 ? rdzv_root_open(r, o, e) : peer_open(r, o, e);
}

void rdzv_close(struct rdzv *r)
{
	for (long i = 0; r->fds != NULL && i < r->world; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	free(r->fds);
	r->fds = NULL;
}

static int io_fail(struct rdzv *r, struct err *e, long peer)
{
	if (r->rank == 0)
		return rdzv_fail_set(r, e, RDZV_PEER, "lost rank %ld: %s (it failed or was stopped)", peer,
			    strerror(errno));
	return rdzv_fail_set(r, e, RDZV_PEER, "lost rank 0: %s (it failed or was stopped)", strerror(errno));
}

int rdzv_gather(struct rdzv *r, const void *mine, size_t len, void *all, struct err *e)
{
	if (r->rank != 0)
		return sock_send_all(r->fds[0], mine, len) < 0 ? io_fail(r, e, 0) : 0;
	memmove(all, mine, len);
	for (long i = 1; i < r->world; i++)
		if (sock_recv_all(r->fds[i], (char *)all + (size_t)i * len, len) < 0)
			return io_fail(r, e, i);
	return 0;
}

int rdzv_bcast(struct rdzv *r, void *buf, size_t len, struct err *e)
{
	if (r->rank != 0)
		return sock_recv_all(r->fds[0], buf, len) < 0 ? io_fail(r, e, 0) : 0;
	for (long i = 1; i < r->world; i++)
		if (sock_send_all(r->fds[i], buf, len) < 0)
			return io_fail(r, e, i);
	return 0;
}

int rdzv_scatter(struct rdzv *r, const void *all, size_t len, void *mine, struct err *e)
{
	if (r->rank != 0)
		return sock_recv_all(r->fds[0], mine, len) < 0 ? io_fail(r, e, 0) : 0;
	memmove(mine, all, len);
	for (long i = 1; i < r->world; i++)
		if (sock_send_all(r->fds[i], (const char *)all + (size_t)i * len, len) < 0)
			return io_fail(r, e, i);
	return 0;
}

int rdzv_allgather(struct rdzv *r, const void *mine, size_t len, void *all, struct err *e)
{
	if (rdzv_gather(r, mine, len, all, e) < 0)
		return -1;
	return rdzv_bcast(r, all, len * (size_t)r->world, e);
}

/* Reductions go through rank 0: a few numbers per call, never bulk data. */
#define REDUCE_BODY(T)                                                                 \
	T *all = NULL;                                                                 \
	int rv = -1;                                                                   \
	if (r->rank == 0) {                                                            \
		all = malloc((size_t)r->world * n * sizeof(T));                        \
		if (all == NULL)                                                       \
			return rdzv_fail_set(r, e, RDZV_SYS, "rendezvous: out of memory");      \
	}                                                                              \
	if (rdzv_gather(r, v, n * sizeof(T), all, e) < 0)                              \
		goto out;                                                              \
	if (r->rank == 0)                                                              \
		for (long i = 1; i < r->world; i++)                                    \
			for (size_t k = 0; k < n; k++) {                               \
				T x = all[(size_t)i * n + k];                          \
				if (op == RDZV_SUM)                                    \
					v[k] += x;                                     \
				else if (op == RDZV_MIN ? x < v[k] : x > v[k])         \
					v[k] = x;                                      \
			}                                                              \
	rv = rdzv_bcast(r, v, n * sizeof(T), e);                                       \
out:                                                                                   \
	free(all);                                                                     \
	return rv;

int rdzv_allreduce_f64(struct rdzv *r, double *v, size_t n, enum rdzv_op op, struct err *e)
{
	REDUCE_BODY(double)
}

int rdzv_allreduce_i64(struct rdzv *r, int64_t *v, size_t n, enum rdzv_op op, struct err *e)
{
	REDUCE_BODY(int64_t)
}

int rdzv_barrier(struct rdzv *r, struct err *e)
{
	int64_t one = 1;

	return rdzv_allreduce_i64(r, &one, 1, RDZV_SUM, e);
}
