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

struct lobby *sock_lobby_new(void)
{
	return lobby_new(sizeof(struct peer_hello), SOCK_HELLO_MS);
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

struct peer_want {
	const char *job;
	const uint8_t *key;
};

/* Whether a whole hello is a rank's of the job that proves the key. */
static bool peer_ok(const void *hello, void *ctx)
{
	const struct peer_hello *h = hello;
	const struct peer_want *w = ctx;
	uint8_t mac[JOBKEY_LEN];

	if (memcmp(h->tag, PEER_TAG, sizeof(h->tag)) != 0 ||
	    strncmp(h->job, w->job, sizeof(h->job)) != 0 || !memchr(h->job, '\0', sizeof(h->job)))
		return false;
	peer_mac(w->key, h, mac);
	return jobkey_equal(mac, h->mac);
}

int sock_accept_peer(int listen_fd, struct lobby *l, const char *job, const uint8_t *key,
		     int timeout_ms, long *who, struct err *e)
{
	struct peer_want w = { job, key };
	struct peer_hello h;
	/* Until a rank of this job introduces itself and proves it: whatever
	 * else connects (a port scanner, a stale rank of another job, another
	 * user with the public job string) is closed, and never holds up the
	 * others (lobby.h). */
	int fd = lobby_accept(l, listen_fd, peer_ok, &w, &h, -1, mono_ms() + timeout_ms);

	if (fd < 0)
		return err_set(e, 1, "socket backend: no peer connected within %d s",
			       timeout_ms / 1000);
	*who = (long)ntohl(h.rank);
	return fd;
}
