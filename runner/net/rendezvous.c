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

#define MAGIC "CTRUNRZ1"
#define HELLO_TIMEOUT_MS 5000
#define ROOT_GRACE_MS 2000

/* What a connecting rank says first, and rank 0's verdict. */
struct hello {
	char magic[8];
	uint32_t rank, world; /* network order */
	char job[64];
	char host[64];
};

struct status {
	char magic[8];
	uint32_t kind; /* enum rdzv_fail, network order; RDZV_OK = go */
	char msg[512];
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sock_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receives exactly len bytes, giving up at `deadline` (errno ETIMEDOUT);
 * a negative deadline waits for ever. */
static int recv_until(int fd, void *buf, size_t len, long deadline)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = deadline < 0 ? -1 : deadline - now_ms();
		ssize_t n;
		int ret;

		if (deadline >= 0 && left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ret = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (ret == 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sock_recv_all(int fd, void *buf, size_t len)
{
	return recv_until(fd, buf, len, -1);
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src != NULL ? src : "", size - 1);

	memcpy(dst, src != NULL ? src : "", n);
	dst[n] = '\0';
}

static int fail(struct rdzv *r, struct err *e, enum rdzv_fail kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct rdzv *r, struct err *e, enum rdzv_fail kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = 1;
	r->fail = kind;
	return -1;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void send_status(int fd, enum rdzv_fail kind, const char *msg)
{
	struct status s = { .kind = htonl((uint32_t)kind) };

	memcpy(s.magic, MAGIC, 8);
	copy_str(s.msg, sizeof(s.msg), msg);
	sock_send_all(fd, &s, sizeof(s));
}

/* Ranks 1..world-1 as a list "2,3" (at most a line's worth). */
static void missing_ranks(const struct rdzv *r, char *out, size_t size)
{
	size_t len = 0;
	long shown = 0;

	out[0] = '\0';
	for (long i = 1; i < r->world && len + 24 < size; i++) {
		if (r->fds[i] >= 0)
			continue;
		if (shown++ == 16) {
			snprintf(out + len, size - len, ",...");
			return;
		}
		len += (size_t)snprintf(out + len, size - len, "%s%ld", len > 0 ? "," : "", i);
	}
}

/* Is `addr` (a name or number) one of this host's addresses?  Unknown
 * answers count as yes: only a sure "elsewhere" is a diagnosis. */
static bool is_local(const char *addr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct ifaddrs *ifs = NULL;
	bool local = false;

	if (getaddrinfo(addr, NULL, &hints, &res) != 0 || getifaddrs(&ifs) < 0) {
		if (res != NULL)
			freeaddrinfo(res);
		return true;
	}
	for (struct addrinfo *a = res; a != NULL && !local; a = a->ai_next)
		for (struct ifaddrs *i = ifs; i != NULL && !local; i = i->ifa_next) {
			if (i->ifa_addr == NULL || i->ifa_addr->sa_family != a->ai_family)
				continue;
			if (a->ai_family == AF_INET)
				local = ((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr.s_addr ==
					((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr;
			else if (a->ai_family == AF_INET6)
				local = memcmp(&((struct sockaddr_in6 *)(void *)a->ai_addr)->sin6_addr,
					       &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
					       sizeof(struct in6_addr)) == 0;
		}
	/* 127.0.0.2 and friends are local without being listed. */
	for (struct addrinfo *a = res; a != NULL && !local; a = a->ai_next)
		local = a->ai_family == AF_INET &&
			(ntohl(((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return local;
}

static int root_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char (*hosts)[64] = NULL, missing[256];
	/* A little longer than the others try to connect: when MASTER_PORT is
	 * unreachable their diagnosis is the precise one, let it come first. */
	long arrived = 1, deadline = now_ms() + o->timeout_ms + ROOT_GRACE_MS;
	int lfd = -1, one = 1, rv = -1, family = AF_INET;
	struct sockaddr_storage sa = { 0 };
	socklen_t salen;

	/* Bind the wildcard address on the family of MASTER_ADDR, as
	 * torch's TCPStore does: the check then fails exactly where a
	 * training job would. */
	if (getaddrinfo(o->addr, NULL, &hints, &res) == 0) {
		family = res->ai_family;
		freeaddrinfo(res);
	}
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons((uint16_t)o->port);
		salen = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = htons((uint16_t)o->port);
		salen = sizeof(*s4);
	}
	if (!is_local(o->addr)) {
		fail(r, e, RDZV_UNREACHABLE, "MASTER_ADDR %s is not an address of %s, where rank 0 "
		     "runs: the other ranks would look for rank 0 elsewhere (pass --master-addr with "
		     "an address of the first node)", o->addr, o->host);
		goto out;
	}
	hosts = calloc((size_t)r->world, sizeof(*hosts));
	lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (hosts == NULL || lfd < 0) {
		fail(r, e, RDZV_SYS, "rendezvous socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, salen) < 0) {
		if (errno == EADDRINUSE)
			fail(r, e, RDZV_PORT_IN_USE, "port in use: MASTER_PORT %ld is already taken on %s "
			     "(rank 0's host) by another job or service; pass --master-port", o->port,
			     o->host);
		else
			fail(r, e, RDZV_SYS, "rank 0 cannot listen on MASTER_PORT %ld on %s: %s",
			     o->port, o->host, strerror(errno));
		goto out;
	}
	if (listen(lfd, 4096) < 0) {
		fail(r, e, RDZV_SYS, "listen on MASTER_PORT %ld: %s", o->port, strerror(errno));
		goto out;
	}
	copy_str(hosts[0], sizeof(hosts[0]), o->host);
	while (arrived < r->world) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		struct hello h;
		long left = deadline - now_ms(), rank, world;
		int fd, ret;

		if (left <= 0) {
			missing_ranks(r, missing, sizeof(missing));
			fail(r, e, RDZV_WORLD, "world size mismatch: %ld of WORLD_SIZE=%ld ranks reached "
			     "the rendezvous at %s:%ld within %ds (missing ranks %s: they did not start, "
			     "or WORLD_SIZE is larger than the job)", arrived, r->world, o->addr, o->port,
			     o->timeout_ms / 1000, missing);
			goto out;
		}
		ret = poll(&pfd, 1, (int)left);
		if (ret <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			fail(r, e, RDZV_SYS, "rank 0 on %s ran out of file descriptors after %ld of %ld "
			     "ranks (raise ulimit -n)", o->host, arrived, r->world);
			goto out;
		}
		if (fd < 0)
			continue;
		/* Whatever does not introduce itself as a rank of this job is
		 * dropped, and rank 0 keeps waiting for the real ones. */
		if (recv_until(fd, &h, sizeof(h), now_ms() + HELLO_TIMEOUT_MS) < 0 ||
		    memcmp(h.magic, MAGIC, 8) != 0) {
			close(fd);
			continue;
		}
		h.job[sizeof(h.job) - 1] = h.host[sizeof(h.host) - 1] = '\0';
		rank = (long)ntohl(h.rank);
		world = (long)ntohl(h.world);
		if (strcmp(h.job, o->job) != 0) {
			char msg[300];

			snprintf(msg, sizeof(msg), "MASTER_PORT %ld on %s is in use by ctrun job %s "
				 "(this is job %s); pass --master-port", o->port, o->host, o->job, h.job);
			send_status(fd, RDZV_FOREIGN, msg);
			close(fd);
			continue;
		}
		tune(fd);
		if (world != r->world) {
			fail(r, e, RDZV_WORLD, "world size mismatch: rank %ld on %s has WORLD_SIZE=%ld, "
			     "rank 0 on %s has WORLD_SIZE=%ld", rank, h.host, world, o->host, r->world);
		} else if (rank <= 0 || rank >= r->world || r->fds[rank] >= 0) {
			const char *other = rank == 0 ? o->host
				: rank > 0 && rank < r->world ? hosts[rank] : NULL;

			if (other != NULL)
				fail(r, e, RDZV_DUP_RANK, "duplicate RANK %ld: on %s and on %s (check "
				     "--node-rank/--nnodes and the launch mode)", rank, other, h.host);
			else
				fail(r, e, RDZV_WORLD, "world size mismatch: rank %ld on %s arrived but "
				     "WORLD_SIZE is %ld", rank, h.host, r->world);
		} else {
			r->fds[rank] = fd;
			copy_str(hosts[rank], sizeof(hosts[rank]), h.host);
			arrived++;
			continue;
		}
		send_status(fd, r->fail, e->msg);
		close(fd);
		goto out;
	}
	rv = 0;
out:
	for (long i = 1; i < r->world; i++)
		if (r->fds[i] >= 0)
			send_status(r->fds[i], rv == 0 ? RDZV_OK : r->fail, rv == 0 ? "" : e->msg);
	if (rv == 0) {
		struct sockaddr_storage me;
		socklen_t len = sizeof(me);

		if (getsockname(r->fds[1], (struct sockaddr *)&me, &len) == 0)
			getnameinfo((struct sockaddr *)&me, len, r->local_addr, sizeof(r->local_addr),
				    NULL, 0, NI_NUMERICHOST);
	}
	if (lfd >= 0)
		close(lfd);
	free(hosts);
	return rv;
}

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

static int peer_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct hello h = { .rank = htonl((uint32_t)o->rank), .world = htonl((uint32_t)o->world) };
	struct status s;
	long start = now_ms(), deadline = start + o->timeout_ms;
	char port[16];
	int fd = -1, last = 0, ret;
	enum rdzv_fail kind;

	snprintf(port, sizeof(port), "%ld", o->port);
	ret = getaddrinfo(o->addr, port, &hints, &res);
	if (ret != 0)
		return fail(r, e, RDZV_UNREACHABLE, "MASTER_ADDR '%s' does not resolve on %s: %s",
			    o->addr, o->host, gai_strerror(ret));
	/* Rank 0 may start later than us: retry until the timeout, and
	 * remember how the last attempt failed for the diagnosis. */
	while (fd < 0 && now_ms() < deadline) {
		long left = deadline - now_ms();

		fd = try_connect(res, (int)(left < 2000 ? left : 2000));
		if (fd >= 0)
			break;
		last = errno;
		if (last != ETIMEDOUT) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		int secs = o->timeout_ms / 1000;

		if (last == ECONNREFUSED)
			return fail(r, e, RDZV_PORT_BLOCKED, "port blocked or not listening: %s:%ld "
				    "refused connections from %s for %ds (rank 0 is not listening there: "
				    "it failed, or MASTER_ADDR is not rank 0's host, or a firewall rejects "
				    "the port)", o->addr, o->port, o->host, secs);
		if (last == ETIMEDOUT)
			return fail(r, e, RDZV_PORT_BLOCKED, "port blocked: connecting from %s to %s:%ld "
				    "timed out for %ds (a firewall drops the port, or MASTER_ADDR is not "
				    "reachable from here)", o->host, o->addr, o->port, secs);
		if (last == EHOSTUNREACH || last == ENETUNREACH)
			return fail(r, e, RDZV_UNREACHABLE, "no route from %s to MASTER_ADDR %s: %s "
				    "(wrong interface or address)", o->host, o->addr, strerror(last));
		return fail(r, e, RDZV_SYS, "connecting from %s to %s:%ld: %s", o->host, o->addr,
			    o->port, strerror(last));
	}
	tune(fd);
	r->fds[0] = fd;
	memcpy(h.magic, MAGIC, 8);
	copy_str(h.job, sizeof(h.job), o->job);
	copy_str(h.host, sizeof(h.host), o->host);
	if (sock_send_all(fd, &h, sizeof(h)) < 0)
		return fail(r, e, RDZV_PEER, "rendezvous at %s:%ld: %s", o->addr, o->port,
			    strerror(errno));
	/* Rank 0 answers when everyone is there, at most its own timeout
	 * after it started: allow for it starting up to that much later. */
	if (recv_until(fd, &s, sizeof(s), now_ms() + 2L * o->timeout_ms + 10000) < 0) {
		if (errno == ETIMEDOUT)
			return fail(r, e, RDZV_FOREIGN, "%s:%ld accepted the connection but never "
				    "answered as ctrun's rank 0 (another service on MASTER_PORT?)",
				    o->addr, o->port);
		return fail(r, e, RDZV_PEER, "rank 0 closed the rendezvous at %s:%ld", o->addr,
			    o->port);
	}
	if (memcmp(s.magic, MAGIC, 8) != 0)
		return fail(r, e, RDZV_FOREIGN, "%s:%ld answered, but not as ctrun's rank 0 (another "
			    "service on MASTER_PORT?)", o->addr, o->port);
	s.msg[sizeof(s.msg) - 1] = '\0';
	kind = (enum rdzv_fail)ntohl(s.kind);
	/* Rank 0 prints its own diagnosis; a foreign job's rank must print
	 * the refusal itself, rank 0 did not fail over it. */
	if (kind == RDZV_FOREIGN)
		return fail(r, e, RDZV_FOREIGN, "%s", s.msg);
	if (kind != RDZV_OK)
		return fail(r, e, RDZV_PEER, "rank 0: %s", s.msg);
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
	copy_str(r->local_addr, sizeof(r->local_addr), "127.0.0.1");
	if (o->world < 1 || o->rank < 0 || o->rank >= o->world)
		return fail(r, e, RDZV_WORLD, "RANK=%ld is not below WORLD_SIZE=%ld on %s", o->rank,
			    o->world, o->host);
	r->fds = malloc((size_t)o->world * sizeof(*r->fds));
	if (r->fds == NULL)
		return fail(r, e, RDZV_SYS, "rendezvous: out of memory");
	for (long i = 0; i < o->world; i++)
		r->fds[i] = -1;
	if (o->world == 1)
		return 0;
	return o->rank == 0 ? root_open(r, o, e) : peer_open(r, o, e);
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
		return fail(r, e, RDZV_PEER, "lost rank %ld: %s (it failed or was stopped)", peer,
			    strerror(errno));
	return fail(r, e, RDZV_PEER, "lost rank 0: %s (it failed or was stopped)", strerror(errno));
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
			return fail(r, e, RDZV_SYS, "rendezvous: out of memory");      \
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
