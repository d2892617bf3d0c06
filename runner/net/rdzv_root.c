/* rdzv_root.c - rank 0's side of the rendezvous: listen on MASTER_PORT,
 * read every connection's hello in one poll loop, tell strangers, other
 * jobs and other ctrun versions apart from the job's own ranks, and say
 * in one line what is wrong when the job's ranks do not add up. */
#include "rendezvous_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* A connection rank 0 accepted, and how far its handshake is
 * (rendezvous_int.h): its hello, then its proof. */
struct pending {
	int fd;
	bool challenged;     /* a hello MAC'd with the key is in, the challenge sent: the
			      * proof is due, and the connection is no stranger's */
	size_t got;          /* bytes of the hello, then of the proof */
	long born;           /* when accepted: the oldest stranger makes room first */
	long deadline;
	struct hello h;
	uint8_t nonce0[RDZV_NONCE_LEN];
	uint8_t proof[JOBKEY_LEN];
};

enum pend_state {
	PEND_WAIT,     /* more to come */
	PEND_READY,    /* a rank of this job that proved the key */
	PEND_VERSION,  /* a rank of another ctrun version */
	PEND_FOREIGN,  /* a rank of another job (another job string) */
	PEND_STRANGER, /* wrong first bytes, gone, or silent past its deadline */
	PEND_FORGED,   /* this job's string, but no proof of its key */
};

/* Sends rank 0's challenge for the hello in p: 0, or -1 when it cannot be
 * sent (the peer is gone or not reading). */
static int challenge(struct pending *p, const uint8_t key[JOBKEY_LEN])
{
	struct challenge c = { .head.kind = htonl(RDZV_KIND_CHALLENGE) };
	struct err e = { 0 };

	if (jobkey_random(p->nonce0, sizeof(p->nonce0), &e) < 0)
		return -1;
	memcpy(c.head.magic, MAGIC, 8);
	memcpy(c.nonce, p->nonce0, sizeof(c.nonce));
	rdzv_auth_mac(key, "root", &p->h, p->nonce0, c.mac);
	/* 72 bytes into an empty socket buffer: all or nothing. */
	if (send(p->fd, &c, sizeof(c), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(c))
		return -1;
	return 0;
}

/* The hello of this job string is in.  MAC'd with the key: challenged,
 * and from now on the proof is due.  Not: challenged all the same (a rank
 * with another key then says that rank 0 does not hold its key), then
 * dropped. */
static enum pend_state hello_in(struct pending *p, long now, const uint8_t key[JOBKEY_LEN])
{
	uint8_t mac[JOBKEY_LEN];

	rdzv_hello_mac(key, &p->h, mac);
	if (!jobkey_equal(mac, p->h.mac)) {
		challenge(p, key);
		return PEND_FORGED;
	}
	if (challenge(p, key) < 0)
		return PEND_STRANGER;
	p->challenged = true;
	p->got = 0;
	p->deadline = now + HELLO_TIMEOUT_MS;
	return PEND_WAIT;
}

/* Reads what the connection has and moves its handshake on. */
static enum pend_state pending_read(struct pending *p, short revents, long now, const char *job,
				    const uint8_t key[JOBKEY_LEN])
{
	char *buf = p->challenged ? (char *)p->proof : (char *)&p->h;
	size_t want = p->challenged ? sizeof(p->proof) : sizeof(p->h);

	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = recv(p->fd, buf + p->got, want - p->got, MSG_DONTWAIT);

		if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
			return p->challenged ? PEND_FORGED : PEND_STRANGER;
		if (n > 0)
			p->got += (size_t)n;
	}
	if (p->challenged) {
		uint8_t mac[JOBKEY_LEN];

		if (p->got < want)
			return now >= p->deadline ? PEND_FORGED : PEND_WAIT;
		rdzv_auth_mac(key, "rank", &p->h, p->nonce0, mac);
		return jobkey_equal(mac, p->proof) ? PEND_READY : PEND_FORGED;
	}
	if (p->got > 0 && memcmp(p->h.magic, MAGIC, p->got < MAGIC_NAME_LEN ? p->got
									  : MAGIC_NAME_LEN) != 0)
		return PEND_STRANGER;
	if (p->got >= sizeof(p->h.magic) && memcmp(p->h.magic, MAGIC, sizeof(p->h.magic)) != 0)
		return PEND_VERSION;
	if (p->got < want)
		return now >= p->deadline ? PEND_STRANGER : PEND_WAIT;
	p->h.job[sizeof(p->h.job) - 1] = p->h.host[sizeof(p->h.host) - 1] = '\0';
	if (strcmp(p->h.job, job) != 0)
		return PEND_FOREIGN;
	return hello_in(p, now, key);
}

/* A rank of another job: told, so that it says what is wrong (its own
 * job does not fail over it), then dropped. */
static void foreign_refusal(int fd, const struct rdzv_opts *o, const struct hello *h)
{
	char msg[300];

	snprintf(msg, sizeof(msg), "MASTER_PORT %ld on %s is in use by ctrun job %s "
		 "(this is job %s); pass --master-port", o->port, o->host, o->job, h->job);
	rdzv_send_status(fd, RDZV_FOREIGN, msg);
}

/* A rank of another ctrun version: told, in the status layout every
 * version shares (the magic first), then dropped. */
static void version_refusal(int fd, const struct hello *h)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "rank 0 runs another version of ctrun (rendezvous protocol "
		 "%c, this rank speaks %c): use the same ctrun on every node", MAGIC[MAGIC_NAME_LEN],
		 h->magic[MAGIC_NAME_LEN]);
	/* Still non-blocking: into an empty socket buffer, or not at all. */
	rdzv_send_status(fd, RDZV_PEER, msg);
}

/* The connections rank 0 is reading, in one poll loop: strangers (no hello
 * MAC'd with the key yet) hold at most MAX_PENDING places, the oldest
 * making room for a newcomer; the others are key holders' (rank 0 sent
 * them its challenge). */
struct pool {
	struct pending *v;
	struct pollfd *pfd; /* pfd[0] the listening socket, pfd[k + 1] v[k] */
	size_t n, cap;
	long forged;        /* connections that named the job without its key */
};

static size_t strangers(const struct pool *pl, size_t *oldest)
{
	size_t count = 0;

	for (size_t k = 0; k < pl->n; k++)
		if (!pl->v[k].challenged && (count++ == 0 || pl->v[k].born < pl->v[*oldest].born))
			*oldest = k;
	return count;
}

/* What pend k's handshake came to: a rank that proved the key goes to
 * *ready (one a round: another stays, ready again next round); another
 * version or job is told why; anything else but PEND_WAIT is dropped.
 * Returns whether k left the pool (its place now holds the last one). */
static bool settle(struct pool *pl, size_t k, enum pend_state got, const struct rdzv_opts *o,
		   int *ready, struct hello *h)
{
	struct pending *p = &pl->v[k];

	if (got == PEND_WAIT || (got == PEND_READY && *ready >= 0))
		return false;
	if (got == PEND_READY) {
		*ready = p->fd;
		*h = p->h;
	} else {
		if (got == PEND_VERSION)
			version_refusal(p->fd, &p->h);
		else if (got == PEND_FOREIGN)
			foreign_refusal(p->fd, o, &p->h);
		pl->forged += got == PEND_FORGED;
		close(p->fd);
	}
	pl->v[k] = pl->v[--pl->n];
	return true;
}

/* Takes what waits on the listening socket (at most ACCEPT_BATCH) and reads
 * each newcomer's hello at once: under a flood a rank's hello has long
 * arrived when its turn comes, and its MAC takes it out of the strangers'
 * places before any other newcomer could push it out.  -1 only when rank 0
 * runs out of descriptors. */
static int accept_some(struct pool *pl, int lfd, const struct rdzv_opts *o, int *ready,
		       struct hello *h)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		size_t oldest = 0;
		long now;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (c < 0)
			return errno == EMFILE || errno == ENFILE ? -1 : 0;
		if (strangers(pl, &oldest) == MAX_PENDING) {
			close(pl->v[oldest].fd); /* the oldest stranger makes room */
			pl->v[oldest] = pl->v[--pl->n];
		} else if (pl->n == pl->cap) {
			close(c); /* every place a key holder's: that rank connects again */
			continue;
		}
		now = mono_ms();
		pl->v[pl->n++] = (struct pending){ .fd = c, .born = now,
						   .deadline = now + HELLO_TIMEOUT_MS };
		settle(pl, pl->n - 1, pending_read(&pl->v[pl->n - 1], POLLIN, now, o->job, o->key),
		       o, ready, h);
	}
	return 0;
}

/* The wildcard address, on the family of MASTER_ADDR, as torch's TCPStore
 * binds it: the check then fails exactly where a training job would. */
static socklen_t wildcard(const char *addr, long port, struct sockaddr_storage *sa, int *family)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;

	*family = AF_INET;
	if (getaddrinfo(addr, NULL, &hints, &res) == 0) {
		*family = res->ai_family;
		freeaddrinfo(res);
	}
	if (*family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons((uint16_t)port);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

	s4->sin_family = AF_INET;
	s4->sin_addr.s_addr = htonl(INADDR_ANY);
	s4->sin_port = htons((uint16_t)port);
	return sizeof(*s4);
}

/* lfd bound to sa and listening, or -1 with r's failure said. */
static int root_listen(struct rdzv *r, const struct rdzv_opts *o, int lfd,
		       const struct sockaddr_storage *sa, socklen_t salen, struct err *e)
{
	int one = 1;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)sa, salen) < 0) {
		if (errno == EADDRINUSE)
			return rdzv_fail_set(r, e, RDZV_PORT_IN_USE, "port in use: MASTER_PORT %ld is "
					     "already taken on %s (rank 0's host) by another job or "
					     "service; pass --master-port", o->port, o->host);
		return rdzv_fail_set(r, e, RDZV_SYS, "rank 0 cannot listen on MASTER_PORT %ld on %s: %s",
				     o->port, o->host, strerror(errno));
	}
	if (listen(lfd, 4096) < 0)
		return rdzv_fail_set(r, e, RDZV_SYS, "listen on MASTER_PORT %ld: %s", o->port,
				     strerror(errno));
	return 0;
}

/* rank 0's wait for the others, with what it has seen. */
struct gather {
	struct rdzv *r;
	const struct rdzv_opts *o;
	int lfd;
	struct pool pl;
	char (*hosts)[64]; /* hosts[rank]: where each rank arrived from */
	long arrived;
};

static int world_timeout(struct gather *g, struct err *e)
{
	char missing[256];

	missing_ranks(g->r, missing, sizeof(missing));
	return rdzv_fail_set(g->r, e, RDZV_WORLD, "world size mismatch: %ld of WORLD_SIZE=%ld ranks "
			     "reached the rendezvous at %s:%ld within %ds (missing ranks %s: they "
			     "did not start, or WORLD_SIZE is larger than the job)%s", g->arrived,
			     g->r->world, g->o->addr, g->o->port, g->o->timeout_ms / 1000, missing,
			     g->pl.forged > 0 ? "; connections that named this job but did not "
			     "prove its key were dropped: do all nodes share ~/.config/ctrun/job.key "
			     "or " JOBKEY_SECRET_ENV "? (docs/bench.md)" : "");
}

/* One round of the poll loop, until `left` ms have passed: *fd a rank
 * that proved the key (its hello in *h), or -1.  -1 on a failure (said). */
static int round_of(struct gather *g, long now, long left, int *fd, struct hello *h,
		    struct err *e)
{
	struct pool *pl = &g->pl;
	long wait = left;
	int ret;

	/* Every connection is read here, in this one loop: a silent one (a
	 * port scanner, a health check, a stale rank) holds nobody up, and
	 * goes after HELLO_TIMEOUT_MS or when a newcomer needs its place. */
	pl->pfd[0] = (struct pollfd){ .fd = g->lfd, .events = POLLIN };
	for (size_t k = 0; k < pl->n; k++) {
		pl->pfd[k + 1] = (struct pollfd){ .fd = pl->v[k].fd, .events = POLLIN };
		if (pl->v[k].deadline - now < wait)
			wait = pl->v[k].deadline - now;
	}
	ret = poll(pl->pfd, pl->n + 1, wait < 0 ? 0 : (int)wait);
	if (ret < 0 && errno != EINTR)
		return rdzv_fail_set(g->r, e, RDZV_SYS, "rendezvous: poll: %s", strerror(errno));
	*fd = -1;
	for (size_t k = pl->n; k-- > 0;)
		settle(pl, k, pending_read(&pl->v[k], pl->pfd[k + 1].revents, mono_ms(), g->o->job,
					   g->o->key), g->o, fd, h);
	if ((pl->pfd[0].revents & POLLIN) && accept_some(pl, g->lfd, g->o, fd, h) < 0)
		return rdzv_fail_set(g->r, e, RDZV_SYS, "rank 0 on %s ran out of file descriptors "
				     "after %ld of %ld ranks (raise ulimit -n)", g->o->host,
				     g->arrived, g->r->world);
	return 0;
}

/* A rank that proved the key, on fd (blocking now): given its place, or
 * told what is wrong (-1, the failure set). */
static int admit(struct gather *g, int fd, const struct hello *h, struct err *e)
{
	struct rdzv *r = g->r;
	const struct rdzv_opts *o = g->o;
	long rank = (long)ntohl(h->rank), world = (long)ntohl(h->world);

	rdzv_tune(fd);
	if (world != r->world) {
		rdzv_fail_set(r, e, RDZV_WORLD, "world size mismatch: rank %ld on %s has WORLD_SIZE=%ld, "
		     "rank 0 on %s has WORLD_SIZE=%ld", rank, h->host, world, o->host, r->world);
	} else if (rank <= 0 || rank >= r->world || r->fds[rank] >= 0) {
		const char *other = rank == 0 ? o->host
			: rank > 0 && rank < r->world ? g->hosts[rank] : NULL;

		if (other != NULL)
			rdzv_fail_set(r, e, RDZV_DUP_RANK, "duplicate RANK %ld: on %s and on %s (check "
			     "--node-rank/--nnodes and the launch mode)", rank, other, h->host);
		else
			rdzv_fail_set(r, e, RDZV_WORLD, "world size mismatch: rank %ld on %s arrived but "
			     "WORLD_SIZE is %ld", rank, h->host, r->world);
	} else {
		r->fds[rank] = fd;
		rdzv_copy_str(g->hosts[rank], sizeof(g->hosts[rank]), h->host);
		g->arrived++;
		return 0;
	}
	rdzv_send_status(fd, r->fail, e->msg);
	close(fd);
	return -1;
}

/* Waits for ranks 1..world-1, until the deadline. */
static int gather_ranks(struct gather *g, long deadline, struct err *e)
{
	while (g->arrived < g->r->world) {
		struct hello h;
		long now = mono_ms();
		int fd;

		if (deadline - now <= 0)
			return world_timeout(g, e);
		if (round_of(g, now, deadline - now, &fd, &h, e) < 0)
			return -1;
		if (fd < 0)
			continue;
		if (fcntl(fd, F_SETFL, 0) < 0) {
			close(fd);
			continue;
		}
		if (admit(g, fd, &h, e) < 0)
			return -1;
	}
	return 0;
}

int rdzv_root_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e)
{
	/* A little longer than the others try to connect: when MASTER_PORT is
	 * unreachable their diagnosis is the precise one, let it come first. */
	long deadline = mono_ms() + o->timeout_ms + ROOT_GRACE_MS;
	struct gather g = { .r = r, .o = o, .lfd = -1, .arrived = 1,
			    .pl = { .cap = MAX_PENDING + (size_t)(r->world - 1 < MAX_PROVING
									? r->world - 1 : MAX_PROVING) } };
	int rv = -1, family;
	struct sockaddr_storage sa = { 0 };
	socklen_t salen = wildcard(o->addr, o->port, &sa, &family);

	if (!is_local(o->addr)) {
		rdzv_fail_set(r, e, RDZV_UNREACHABLE, "MASTER_ADDR %s is not an address of %s, where rank 0 "
		     "runs: the other ranks would look for rank 0 elsewhere (pass --master-addr with "
		     "an address of the first node)", o->addr, o->host);
		goto out;
	}
	g.hosts = calloc((size_t)r->world, sizeof(*g.hosts));
	g.pl.v = calloc(g.pl.cap, sizeof(*g.pl.v));
	g.pl.pfd = calloc(g.pl.cap + 1, sizeof(*g.pl.pfd));
	g.lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); /* accept_some drains it */
	if (g.hosts == NULL || g.pl.v == NULL || g.pl.pfd == NULL || g.lfd < 0) {
		rdzv_fail_set(r, e, RDZV_SYS, "rendezvous socket: %s", strerror(errno));
		goto out;
	}
	if (root_listen(r, o, g.lfd, &sa, salen, e) < 0)
		goto out;
	rdzv_copy_str(g.hosts[0], sizeof(g.hosts[0]), o->host);
	rv = gather_ranks(&g, deadline, e);
out:
	for (long i = 1; i < r->world; i++)
		if (r->fds[i] >= 0)
			rdzv_send_status(r->fds[i], rv == 0 ? RDZV_OK : r->fail, rv == 0 ? "" : e->msg);
	if (rv == 0) {
		struct sockaddr_storage me;
		socklen_t len = sizeof(me);

		if (getsockname(r->fds[1], (struct sockaddr *)&me, &len) == 0)
			getnameinfo((struct sockaddr *)&me, len, r->local_addr, sizeof(r->local_addr),
				    NULL, 0, NI_NUMERICHOST);
	}
	for (size_t k = 0; k < g.pl.n; k++)
		close(g.pl.v[k].fd);
	if (g.lfd >= 0)
		close(g.lfd);
	free(g.pl.v);
	free(g.pl.pfd);
	free(g.hosts);
	return rv;
}
