/* watch.c - the batch ctrun's side of the watch (see watch.h). */
#include "watch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netinfo.h"
#include "util.h"

/* The most ranks one node may report (--nproc-per-node's bound). */
#define RANKS_MAX 4096
/* TCP keepalive on every node's connection: a node that stops answering
 * ends it after about IDLE + INTVL * CNT seconds, 30: long enough for a
 * blip of the network the watch uses (often not the training's), short
 * next to Slurm's SlurmdTimeout (300 s by default). */
#define KEEP_IDLE 10
#define KEEP_INTVL 5
#define KEEP_CNT 4

enum { WN_CLOSED, WN_GREETED, WN_UP, WN_DONE };

struct watch_node {
	int fd;
	int state;
	uint8_t nonce[WATCH_NONCE_LEN];
	struct watch_reader rd;
	long host;                 /* index in expect, -1 before hello */
	long long since;
	struct watch_rank *ranks;
	size_t nranks;
	bool lost_told;
};

/* Per expected node: lost, told or to tell. */
struct watch_lost {
	char why[160];
	bool pending;
	bool told;
};
static struct watch_lost *lost_of(const struct watch *w)
{
	return w->lost;
}

/* The address this host reaches `towards` from: what the kernel picks as
 * the source of a datagram there (nothing is sent). */
static int source_addr(const char *towards, char *out, size_t size)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *ai = NULL;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = -1, rv = -1;

	if (getaddrinfo(towards, "9", &hints, &ai) != 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
	    inet_ntop(AF_INET, &sa.sin_addr, out, (socklen_t)size) != NULL && !net_is_loopback(out))
		rv = 0;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return rv;
}

int watch_reach_addr(const char *self, char *const *nodes, char *out, size_t size,
		     struct err *e)
{
	out[0] = '\0';
	for (size_t i = 0; nodes[i] != NULL && out[0] == '\0'; i++)
		if (strcmp(nodes[i], self) != 0 && source_addr(nodes[i], out, size) < 0)
			out[0] = '\0';
	if (out[0] == '\0' && net_resolve_master(self, true, out, size, e) < 0)
		return err_wrap(e, "the watch over the step's nodes");
	return 0;
}

int watch_open(struct watch *w, const char *job, const uint8_t secret[JOBKEY_LEN],
	       const char *addr, struct err *e)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof(sa);

	memset(w, 0, sizeof(*w));
	w->lfd = -1;
	w->step = -1;
	jobkey_derive(secret, "watch", job, NULL, w->key);
	w->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (w->lfd < 0 || bind(w->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(w->lfd, 128) < 0 || getsockname(w->lfd, (struct sockaddr *)&sa, &len) < 0)
		return err_sys(e, EXIT_CTRUN, "the watch over the step's nodes: listening");
	if (xsnprintf(w->where, sizeof(w->where), "%s:%u", addr, ntohs(sa.sin_port)) < 0)
		return err_set(e, EXIT_CTRUN, "the watch's address is too long");
	return 0;
}

static void drop(struct watch_node *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->ranks);
	*c = (struct watch_node){ .fd = -1, .state = WN_CLOSED, .host = -1 };
}

static void end_attempt(struct watch *w)
{
	for (size_t i = 0; i < w->nc; i++)
		drop(&w->c[i]);
	free(w->c);
	w->c = NULL;
	w->nc = 0;
	free(w->said_hello);
	w->said_hello = NULL;
	free(w->lost);
	w->lost = NULL;
	strv_free(&w->expect);
}

void watch_close(struct watch *w)
{
	end_attempt(w);
	if (w->lfd >= 0)
		close(w->lfd);
	w->lfd = -1;
	free(w->pfd);
	w->pfd = NULL;
	explicit_bzero(w->key, sizeof(w->key));
}

int watch_begin(struct watch *w, long attempt, char *const *nodes, long long hang_ms,
		long long first_ms)
{
	size_t n;

	end_attempt(w);
	if (strv_extend(&w->expect, nodes) < 0)
		return -1;
	n = w->expect.n;
	w->said_hello = calloc(n + 1, sizeof(*w->said_hello));
	w->lost = calloc(n + 1, sizeof(*w->lost));
	if (w->said_hello == NULL || w->lost == NULL)
		return -1;
	w->attempt = attempt;
	w->step = -1;
	w->hang_ms = hang_ms;
	w->first_ms = first_ms > hang_ms ? first_ms : hang_ms;
	w->start = mono_ms();
	return 0;
}

static void keepalive(int fd)
{
	int on = 1, idle = KEEP_IDLE, intvl = KEEP_INTVL, cnt = KEEP_CNT;
	unsigned user = (KEEP_IDLE + KEEP_INTVL * KEEP_CNT) * 1000;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	/* And for what we send (S) to a node that no longer answers. */
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

static void accept_one(struct watch *w)
{
	struct watch_node *c = NULL, *grown;
	uint8_t nonce[WATCH_NONCE_LEN];
	char line[WATCH_LINE_MAX];
	int fd = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), len;
	/* Room for every node and as many strangers at once, no more. */
	size_t cap = 2 * w->expect.n + 16;
	struct err e = { 0 };

	if (fd < 0)
		return;
	for (size_t i = 0; i < w->nc && c == NULL; i++)
		if (w->c[i].state == WN_CLOSED)
			c = &w->c[i];
	if (c == NULL && w->nc < cap && (grown = realloc(w->c, (w->nc + 1) * sizeof(*grown)))) {
		w->c = grown;
		c = &w->c[w->nc++];
	}
	/* Full: the oldest connection that has not proven itself goes, so
	 * strangers that keep connecting cannot keep the nodes out. */
	if (c == NULL) {
		for (size_t i = 0; i < w->nc; i++)
			if (w->c[i].state == WN_GREETED && (c == NULL || w->c[i].since < c->since))
				c = &w->c[i];
		if (c != NULL)
			drop(c);
	}
	if (c == NULL || jobkey_random(nonce, sizeof(nonce), &e) < 0 ||
	    (len = watchproto_greeting(nonce, line, sizeof(line))) < 0 ||
	    send(fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len) {
		close(fd);
		return;
	}
	*c = (struct watch_node){ .fd = fd, .state = WN_GREETED, .host = -1, .since = mono_ms() };
	memcpy(c->nonce, nonce, sizeof(nonce));
	keepalive(fd);
}

static void lost(struct watch *w, struct watch_node *c, const char *why)
{
	struct watch_lost *l = &lost_of(w)[c->host];

	if (!l->told && !l->pending) {
		snprintf(l->why, sizeof(l->why), "%s", why);
		l->pending = true;
	}
}

static int hello(struct watch *w, struct watch_node *c, const struct watch_msg *m)
{
	uint8_t mac[JOBKEY_LEN];
	long at = strv_find(&w->expect, m->host);

	if (m->kind != WATCH_HELLO || m->attempt != w->attempt || at < 0 || w->said_hello[at])
		return -1;
	watchproto_mac(w->key, c->nonce, m->attempt, m->step, m->host, mac);
	if (!jobkey_equal(mac, m->mac))
		return -1;
	w->said_hello[at] = true;
	c->host = at;
	c->state = WN_UP;
	if (w->step < 0)
		w->step = m->step;
	return 0;
}

static void progress(struct watch_node *c, const struct watch_msg *m)
{
	long long last = mono_ms() - m->ms;
	struct watch_rank *grown;

	for (size_t i = 0; i < c->nranks; i++)
		if (c->ranks[i].rank == m->rank) {
			c->ranks[i].last = last;
			c->ranks[i].started = m->started;
			return;
		}
	if (c->nranks >= RANKS_MAX ||
	    (grown = realloc(c->ranks, (c->nranks + 1) * sizeof(*grown))) == NULL)
		return;
	c->ranks = grown;
	c->ranks[c->nranks++] = (struct watch_rank){ .rank = m->rank, .last = last,
						     .started = m->started };
}

#define GARBLED "its ctrun sent what the watch cannot read"

/* A connection's whole lines; false when it is to be closed. */
static bool lines(struct watch *w, struct watch_node *c, const char **why)
{
	char line[WATCH_LINE_MAX];
	struct watch_msg m;
	int r;

	while ((r = watch_reader_next(&c->rd, line)) > 0) {
		bool ok = watchproto_parse(line, &m) == 0;

		if (ok && c->state == WN_GREETED)
			ok = hello(w, c, &m) == 0; /* a stranger, or a node of another attempt */
		else if (ok && c->state == WN_UP && m.kind == WATCH_PROGRESS)
			progress(c, &m);
		else if (ok && c->state == WN_UP && m.kind == WATCH_DONE)
			c->state = WN_DONE;
		else if (c->state != WN_DONE)
			ok = false;
		if (!ok) {
			*why = GARBLED;
			return false;
		}
	}
	if (r < 0)
		*why = GARBLED;
	return r == 0;
}

static void readable(struct watch *w, struct watch_node *c)
{
	const char *why = NULL;
	ssize_t got;

	for (;;) {
		got = recv(c->fd, c->rd.buf + c->rd.len, sizeof(c->rd.buf) - c->rd.len, MSG_DONTWAIT);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return;
		if (got <= 0)
			break;
		c->rd.len += (size_t)got;
		if (!lines(w, c, &why))
			break;
	}
	/* Ended (or garbled) before the node's ctrun said its last word. */
	if (c->state == WN_UP) {
		if (why == NULL && got < 0 && errno == ETIMEDOUT)
			why = "it stopped answering (no TCP answer for about 30 s)";
		else if (why == NULL)
			why = "its ctrun's connection to the batch ctrun ended before its ctrun did "
			      "(the node, its slurmd or its ctrun died)";
		lost(w, c, why);
	}
	drop(c);
}

size_t watch_pollfds(struct watch *w)
{
	size_t n = 0;

	if (w->pfd_cap < w->nc + 1) {
		struct pollfd *grown = realloc(w->pfd, (w->nc + 1) * sizeof(*grown));

		if (grown == NULL)
			return 0;
		w->pfd = grown;
		w->pfd_cap = w->nc + 1;
	}
	w->pfd[n++] = (struct pollfd){ .fd = w->lfd, .events = POLLIN };
	for (size_t i = 0; i < w->nc; i++)
		w->pfd[n++] = (struct pollfd){ .fd = w->c[i].fd, .events = POLLIN };
	return n;
}

void watch_ready(struct watch *w, size_t k, short revents)
{
	if (revents == 0)
		return;
	if (k == 0) {
		accept_one(w);
		return;
	}
	if (k - 1 < w->nc && w->c[k - 1].fd >= 0)
		readable(w, &w->c[k - 1]);
}

/* Which ranks stalled first, as "rank 3 on n2 (41 s), ...", into out. */
static void stalled_first(const struct watch *w, long long now, char *out, size_t size)
{
	long long oldest = now;
	size_t len = 0, named = 0, more = 0;

	for (size_t i = 0; i < w->nc; i++)
		for (size_t r = 0; w->c[i].state == WN_UP && r < w->c[i].nranks; r++)
			if (w->c[i].ranks[r].last < oldest)
				oldest = w->c[i].ranks[r].last;
	out[0] = '\0';
	for (size_t i = 0; i < w->nc; i++)
		for (size_t r = 0; w->c[i].state == WN_UP && r < w->c[i].nranks; r++) {
			const struct watch_rank *k = &w->c[i].ranks[r];
			int got;

			/* Within a second of the oldest: the first to stall. */
			if (k->last > oldest + 1000)
				continue;
			if (named == 8) {
				more++;
				continue;
			}
			got = snprintf(out + len, size - len, "%srank %ld on %s (%lld s)",
				       named ? ", " : "", k->rank, w->expect.v[w->c[i].host],
				       (now - k->last) / 1000);
			if (got < 0 || (size_t)got >= size - len)
				return;
			len += (size_t)got;
			named++;
		}
	if (more > 0)
		snprintf(out + len, size - len, " and %zu more", more);
}

/* Whether no rank of the nodes still running made progress for hang_ms
 * (first_ms for one that made none since it started): only once every
 * node has said hello and reported its workers. */
static bool hung(const struct watch *w, long long now)
{
	size_t up = 0;

	if (w->hang_ms <= 0)
		return false;
	for (size_t h = 0; h < w->expect.n; h++)
		if (!w->said_hello[h] || lost_of(w)[h].told || lost_of(w)[h].pending)
			return false;
	for (size_t i = 0; i < w->nc; i++) {
		if (w->c[i].state != WN_UP)
			continue;
		if (w->c[i].nranks == 0)
			return false;
		for (size_t r = 0; r < w->c[i].nranks; r++) {
			const struct watch_rank *k = &w->c[i].ranks[r];

			if (now - k->last < (k->started ? w->hang_ms : w->first_ms))
				return false;
		}
		up++;
	}
	return up > 0;
}

enum watch_event watch_check(struct watch *w, char *lost_host, size_t lsize, char *why,
			     size_t size)
{
	long long now = mono_ms();
	char who[512];

	for (size_t i = 0; i < w->nc; i++)
		if (w->c[i].state == WN_GREETED && now - w->c[i].since > WATCH_GREET_MS)
			drop(&w->c[i]);
	for (size_t h = 0; h < w->expect.n; h++) {
		struct watch_lost *l = &lost_of(w)[h];

		if (l->pending) {
			l->pending = false;
			l->told = true;
			snprintf(lost_host, lsize, "%s", w->expect.v[h]);
			snprintf(why, size, "%s", l->why);
			return WATCH_EV_LOST;
		}
	}
	if (hung(w, now)) {
		stalled_first(w, now, who, sizeof(who));
		snprintf(why, size, "no rank made progress (a line of output or a touch of its "
			 "heartbeat file) for %lld s; the first to stall: %s", w->hang_ms / 1000, who);
		w->hang_ms = 0; /* said once */
		return WATCH_EV_HANG;
	}
	return watch_settled(w) ? WATCH_EV_ALL_DONE : WATCH_EV_NONE;
}

int watch_timeout(const struct watch *w)
{
	/* Hellos and greetings expire, and hangs are judged, once a second. */
	return w->expect.n > 0 ? 1000 : -1;
}

void watch_tell_stop(struct watch *w, const char *why)
{
	struct watch_msg m = { .kind = WATCH_STOP };
	char line[WATCH_LINE_MAX];
	int len;

	snprintf(m.why, sizeof(m.why), "%s", why);
	len = watchproto_encode(&m, line, sizeof(line));
	for (size_t i = 0; len > 0 && i < w->nc; i++)
		if (w->c[i].state == WN_UP)
			(void)!send(w->c[i].fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool watch_settled(const struct watch *w)
{
	for (size_t h = 0; h < w->expect.n; h++)
		if (!w->said_hello[h] && !lost_of(w)[h].told)
			return false;
	for (size_t i = 0; i < w->nc; i++)
		if (w->c[i].state == WN_UP)
			return false;
	return w->expect.n > 0;
}
