/* lobby.c - connections waiting for their hello, read without blocking
 * (see lobby.h). */
#include "lobby.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

/* One accepted connection whose hello is not whole yet. */
struct waiting {
	int fd;
	long long born;
	size_t got;
};

struct lobby {
	size_t len, n;
	int hello_ms;
	struct waiting v[LOBBY_MAX];
	unsigned char *bufs; /* v[k]'s hello so far at bufs + k * len */
};

struct lobby *lobby_new(size_t len, int hello_ms)
{
	struct lobby *l;

	if (len == 0 || len > LOBBY_HELLO_MAX) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	l->bufs = malloc(LOBBY_MAX * len);
	if (l->bufs == NULL) {
		free(l);
		return NULL;
	}
	l->len = len;
	l->hello_ms = hello_ms;
	return l;
}

void lobby_free(struct lobby *l)
{
	if (l == NULL)
		return;
	for (size_t k = 0; k < l->n; k++)
		close(l->v[k].fd);
	free(l->bufs);
	free(l);
}

static unsigned char *buf_of(struct lobby *l, size_t k)
{
	return l->bufs + k * l->len;
}

/* Connection k leaves (closed unless keep); the last one takes its place. */
static void leave(struct lobby *l, size_t k, bool keep)
{
	if (!keep)
		close(l->v[k].fd);
	if (k != --l->n) {
		l->v[k] = l->v[l->n];
		memcpy(buf_of(l, k), buf_of(l, l->n), l->len);
	}
}

/* Reads what connection k has: 1 when its hello is whole and a peer's
 * (copied to hello), 0 while it is incomplete and young, -1 when it is
 * done for (gone, silent too long, a stranger's). */
static int hear(struct lobby *l, size_t k, long long now, lobby_judge *judge, void *ctx,
		void *hello)
{
	struct waiting *w = &l->v[k];
	ssize_t n = recv(w->fd, buf_of(l, k) + w->got, l->len - w->got, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		w->got += (size_t)n;
	if (w->got < l->len)
		return now - w->born >= l->hello_ms ? -1 : 0;
	if (!judge(buf_of(l, k), ctx))
		return -1;
	memcpy(hello, buf_of(l, k), l->len);
	return 1;
}

/* A peer's connection, as the callers use it: blocking (-1: closed). */
static int proven(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Takes the connections waiting on the listening socket (a batch), each
 * read at once: a peer's hello has usually arrived with it.  The oldest
 * in the lobby makes room for a newcomer.  A peer's is returned. */
static int take_new(struct lobby *l, int lfd, lobby_judge *judge, void *ctx, void *hello)
{
	for (int i = 0; i < LOBBY_MAX; i++) {
		struct pollfd q = { .fd = lfd, .events = POLLIN };
		size_t oldest = 0;
		int fd, ret;

		/* The listening socket may block: only what is there. */
		if (poll(&q, 1, 0) <= 0 ||
		    (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) < 0)
			return -1;
		if (l->n == LOBBY_MAX) {
			for (size_t k = 1; k < l->n; k++)
				if (l->v[k].born < l->v[oldest].born)
					oldest = k;
			leave(l, oldest, false);
		}
		l->v[l->n++] = (struct waiting){ .fd = fd, .born = mono_ms() };
		ret = hear(l, l->n - 1, mono_ms(), judge, ctx, hello);
		if (ret != 0) {
			leave(l, l->n - 1, ret > 0);
			if (ret > 0 && proven(fd) >= 0)
				return fd;
		}
	}
	return -1;
}

int lobby_accept(struct lobby *l, int lfd, lobby_judge *judge, void *ctx, void *hello,
		 int wake, long long deadline)
{
	struct pollfd p[LOBBY_MAX + 2];

	/* Until a peer introduces itself: whatever else connects is closed
	 * at its deadline or when a newcomer needs its place, and never
	 * holds up the others. */
	for (;;) {
		long long now = mono_ms(), wait = deadline - now;
		size_t np = 0;
		int fd;

		for (size_t k = l->n; k-- > 0;) {
			int ret = hear(l, k, now, judge, ctx, hello);

			if (ret == 0)
				continue;
			fd = l->v[k].fd;
			leave(l, k, ret > 0);
			if (ret > 0 && proven(fd) >= 0)
				return fd;
		}
		fd = take_new(l, lfd, judge, ctx, hello);
		if (fd >= 0)
			return fd;
		if (wait <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		p[np++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		if (wake >= 0)
			p[np++] = (struct pollfd){ .fd = wake, .events = POLLIN };
		for (size_t k = 0; k < l->n; k++) {
			p[np++] = (struct pollfd){ .fd = l->v[k].fd, .events = POLLIN };
			if (l->v[k].born + l->hello_ms - now < wait)
				wait = l->v[k].born + l->hello_ms - now;
		}
		if (poll(p, np, wait < 0 ? 0 : wait > INT_MAX ? INT_MAX : (int)wait) > 0 && wake >= 0 &&
		    (p[1].revents & (POLLIN | POLLHUP))) {
			errno = EINTR;
			return -1;
		}
	}
}
