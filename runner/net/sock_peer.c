/* sock_peer.c - the socket collectives' own connections: who may connect
 * to a rank's listening socket, and how a rank proves it (see
 * coll_socket.h). */
#include "coll_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rendezvous_int.h"

/* What a rank says first on a collective's connection: who, of which job,
 * and the proof that it holds the job's key (a MAC over the rest, with a
 * fresh nonce).  One message, no challenge: each rank connects before it
 * accepts (ring), so a round trip here would deadlock; and the addresses
 * came from rank 0 over the authenticated rendezvous.  Other users cannot
 * read the traffic to replay a hello (that takes root on a node). */
struct peer_hello {
	char tag[8];     /* PEER_TAG */
	char job[64];
	uint32_t rank;   /* network order */
	uint8_t nonce[32];
	uint8_t mac[JOBKEY_LEN];
};
#define PEER_TAG "CTRUNSK3"

static void peer_mac(const uint8_t *key, const struct peer_hello *h, uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { "sock", 5 },
						{ h, offsetof(struct peer_hello, mac) } },
		   2, mac);
}

/* One accepted connection whose hello is not complete yet. */
struct waiting {
	int fd;
	long born;
	size_t got;
	struct peer_hello h;
};

struct sock_lobby {
	struct waiting v[SOCK_LOBBY_MAX];
	size_t n;
};

struct sock_lobby *sock_lobby_new(void)
{
	return calloc(1, sizeof(struct sock_lobby));
}

void sock_lobby_free(struct sock_lobby *l)
{
	for (size_t k = 0; l != NULL && k < l->n; k++)
		close(l->v[k].fd);
	free(l);
}

int sock_connect_peer(const char *entry, const char *job, const uint8_t *key, long me,
		      struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res = NULL;
	struct peer_hello h = { .rank = htonl((uint32_t)me) };
	char host[80], port[16];
	int fd;

	memcpy(h.tag, PEER_TAG, sizeof(h.tag));
	snprintf(h.job, sizeof(h.job), "%s", job);
	if (jobkey_random(h.nonce, sizeof(h.nonce), e) < 0)
		return -1;
	peer_mac(key, &h, h.mac);
	if (sscanf(entry, "%79s %15s", host, port) != 2 || getaddrinfo(host, port, &hints, &res) != 0)
		return err_set(e, 1, "socket backend: bad peer address '%s'", entry);
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    sock_send_all(fd, &h, sizeof(h)) < 0) {
		err_sys(e, 1, "socket backend: connecting to %s:%s", host, port);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Reads what waiting connection k has: 1 when it proved itself a rank of
 * `job` (*who set), 0 while its hello is incomplete and young, -1 when it
 * is done for (gone, silent too long, not a rank of this job, no proof). */
static int hear(struct waiting *w, long now, const char *job, const uint8_t *key, long *who)
{
	uint8_t mac[JOBKEY_LEN];
	ssize_t n = recv(w->fd, (char *)&w->h + w->got, sizeof(w->h) - w->got, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		w->got += (size_t)n;
	if (w->got < sizeof(w->h))
		return now - w->born >= SOCK_HELLO_MS ? -1 : 0;
	if (memcmp(w->h.tag, PEER_TAG, sizeof(w->h.tag)) != 0 ||
	    strncmp(w->h.job, job, sizeof(w->h.job)) != 0 || !memchr(w->h.job, '\0', sizeof(w->h.job)))
		return -1;
	peer_mac(key, &w->h, mac);
	if (!jobkey_equal(mac, w->h.mac))
		return -1;
	*who = (long)ntohl(w->h.rank);
	return 1;
}

/* Leaves waiting connection k: closed unless keep. */
static void leave(struct sock_lobby *l, size_t k, bool keep)
{
	if (!keep)
		close(l->v[k].fd);
	l->v[k] = l->v[--l->n];
}

/* Takes the connections waiting on the listening socket (a batch), each
 * read at once: a peer's hello has usually arrived with it.  The oldest
 * in the lobby makes room for a newcomer.  A proven one is returned. */
static int take_new(int listen_fd, struct sock_lobby *l, const char *job, const uint8_t *key,
		    long *who)
{
	for (int i = 0; i < SOCK_LOBBY_MAX; i++) {
		struct pollfd q = { .fd = listen_fd, .events = POLLIN };
		size_t oldest = 0;
		int fd, ret;

		/* The listening socket may block: only what is there. */
		if (poll(&q, 1, 0) <= 0 ||
		    (fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) < 0)
			return -1;
		if (l->n == SOCK_LOBBY_MAX) {
			for (size_t k = 1; k < l->n; k++)
				if (l->v[k].born < l->v[oldest].born)
					oldest = k;
			leave(l, oldest, false);
		}
		l->v[l->n++] = (struct waiting){ .fd = fd, .born = rdzv_now_ms() };
		ret = hear(&l->v[l->n - 1], rdzv_now_ms(), job, key, who);
		if (ret != 0) {
			leave(l, l->n - 1, ret > 0);
			if (ret > 0)
				return fd;
		}
	}
	return -1;
}

/* A proven connection, as the callers use it: blocking. */
static int proven(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int sock_accept_peer(int listen_fd, struct sock_lobby *l, const char *job, const uint8_t *key,
		     int timeout_ms, long *who, struct err *e)
{
	long deadline = rdzv_now_ms() + timeout_ms;
	struct pollfd p[SOCK_LOBBY_MAX + 1];

	/* Until a rank of this job introduces itself and proves it: whatever
	 * else connects (a port scanner, a stale rank of another job, another
	 * user with the public job string) is closed, and never holds up the
	 * others. */
	for (;;) {
		long now = rdzv_now_ms(), wait = deadline - now;
		int fd;

		for (size_t k = l->n; k-- > 0;) {
			int ret = hear(&l->v[k], now, job, key, who);

			if (ret == 0)
				continue;
			fd = l->v[k].fd;
			leave(l, k, ret > 0);
			if (ret > 0 && proven(fd) >= 0)
				return fd;
		}
		fd = take_new(listen_fd, l, job, key, who);
		if (fd >= 0 && proven(fd) >= 0)
			return fd;
		if (wait <= 0)
			return err_set(e, 1, "socket backend: no peer connected within %d s",
				       timeout_ms / 1000);
		p[0] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (size_t k = 0; k < l->n; k++) {
			p[k + 1] = (struct pollfd){ .fd = l->v[k].fd, .events = POLLIN };
			if (l->v[k].born + SOCK_HELLO_MS - now < wait)
				wait = l->v[k].born + SOCK_HELLO_MS - now;
		}
		poll(p, l->n + 1, wait < 0 ? 0 : (int)wait);
	}
}
