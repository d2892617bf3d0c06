/* feed_serve.c - the link to the node below, in a thread of its own (see
 * feed_serve.h). */
#include "feed_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "lobby.h"
#include "rendezvous.h"
#include "util.h"

#define CHUNK (1 << 20)

enum stage { S_WAIT, S_HEAD, S_VERIFIED };

struct feed_serve {
	pthread_t th;
	int lfd, wake[2]; /* wake: the caller's news, one byte each (non-blocking) */
	uint8_t key[JOBKEY_LEN];
	char job[64], up_name[256], down_name[256];
	struct feed_link link; /* pointing at the copies above */
	int silent_ms;
	long long admit_by;

	pthread_mutex_t mu; /* over what the caller tells: */
	enum stage stage;
	bool abandon;       /* this node failed: close the link */
	uint32_t status;
	char digest[80], msg[256];
	char *layers;
	uint32_t nlayers;
	uint64_t size, have;
	int file;
	bool has_sum;
	uint8_t sum[FEED_SUM_LEN];

	/* the thread's own */
	struct feed_hello hello; /* the node below's */
	struct feed_head hd;     /* as sent to it */
	int down;
	uint32_t seq;
	uint64_t sent;
	struct sha256_ctx hash;
	char *buf;
	enum feed_served outcome;
	char why[200];
};

/* What the caller said, as the thread reads it. */
struct news {
	enum stage stage;
	bool abandon;
	uint64_t have;
};

static struct news news_of(struct feed_serve *s)
{
	struct news n;

	pthread_mutex_lock(&s->mu);
	n = (struct news){ s->stage, s->abandon, s->have };
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void tell(struct feed_serve *s)
{
	char c = 0;

	/* Full: the thread has news waiting already. */
	if (write(s->wake[1], &c, 1) < 0 && errno != EAGAIN)
		return;
}

static void drain(int fd)
{
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static bool hello_for_link(const void *hello, void *ctx)
{
	struct feed_serve *s = ctx;

	return feed_hello_ok(hello, s->key, &s->link);
}

/* The node below: the first connection whose hello was made for this
 * link; strangers are dropped (lobby.h).  -1: none by admit_by, or this
 * node gave up. */
static int admit(struct feed_serve *s)
{
	struct lobby *l = lobby_new(sizeof(struct feed_hello), FEED_HELLO_MS);
	int fd = -1;

	while (l != NULL) {
		fd = lobby_accept(l, s->lfd, hello_for_link, s, &s->hello, s->wake[0], s->admit_by);
		if (fd >= 0 || errno != EINTR)
			break;
		drain(s->wake[0]);
		if (news_of(s).abandon)
			break;
	}
	lobby_free(l);
	close(s->lfd);
	s->lfd = -1;
	return fd;
}

/* Drops the node below, saying why (errno ETIMEDOUT: it stalled). */
static void drop(struct feed_serve *s, const char *why)
{
	s->outcome = errno == ETIMEDOUT ? FEED_STALLED : FEED_GONE;
	if (errno == ETIMEDOUT)
		snprintf(s->why, sizeof(s->why), "it took nothing for %d s (it stopped reading): "
			 "dropped", s->silent_ms / 1000);
	else if (errno != 0)
		snprintf(s->why, sizeof(s->why), "%s: %s", why, strerror(errno));
	else
		snprintf(s->why, sizeof(s->why), "%s", why);
}

static int send_by(struct feed_serve *s, const void *buf, size_t len)
{
	return sock_send_until(s->down, buf, len, mono_ms() + s->silent_ms);
}

static int beat(struct feed_serve *s, uint32_t kind)
{
	struct feed_beat b;

	feed_beat_make(&b, s->key, &s->hello, kind, s->seq++);
	return send_by(s, &b, sizeof(b));
}

/* GO, the head and the record. */
static int send_head(struct feed_serve *s)
{
	feed_head_make(&s->hd, s->key, &s->hello, s->status, s->digest, s->size, s->nlayers, s->msg);
	return beat(s, FEED_GO) < 0 || send_by(s, &s->hd, sizeof(s->hd)) < 0 ||
			       (s->nlayers > 0 && send_by(s, s->layers, s->nlayers) < 0)
		       ? -1 : 0;
}

/* The next bytes of the file, up to `have`. */
static int send_more(struct feed_serve *s, uint64_t have)
{
	size_t want = have - s->sent < CHUNK ? (size_t)(have - s->sent) : CHUNK;
	ssize_t n = pread(s->file, s->buf, want, (off_t)s->sent);

	if (n <= 0) {
		if (n == 0)
			errno = 0;
		drop(s, n < 0 ? "reading this node's copy of the image failed" :
				"this node's copy of the image is short");
		return -1;
	}
	sha256_update(&s->hash, (size_t)n, (const uint8_t *)s->buf);
	if (send_by(s, s->buf, (size_t)n) < 0) {
		drop(s, "sending the image failed");
		return -1;
	}
	s->sent += (uint64_t)n;
	return 0;
}

/* The tail over what was sent, when it is what this node verified. */
static void send_tail(struct feed_serve *s)
{
	uint8_t sum[FEED_SUM_LEN];
	struct feed_tail t;

	sha256_digest(&s->hash, sizeof(sum), sum);
	if (s->has_sum && memcmp(sum, s->sum, sizeof(sum)) != 0) {
		errno = 0;
		drop(s, "this node's copy changed after it was verified");
		return;
	}
	feed_tail_make(&t, s->key, &s->hello, &s->hd, sum, s->layers);
	if (send_by(s, &t, sizeof(t)) < 0)
		drop(s, "sending the image's tail failed");
	else
		s->outcome = FEED_SERVED;
}

/* Until there is news, or (before the head) a keep-alive is due; the node
 * below says nothing after its hello, so anything from it ends the link. */
static int wait_news(struct feed_serve *s, bool headed)
{
	struct pollfd p[2] = { { .fd = s->wake[0], .events = POLLIN },
			       { .fd = s->down, .events = POLLIN } };
	int r = poll(p, 2, headed ? -1 : s->silent_ms / 10);
	char c;

	if (r < 0 && errno != EINTR)
		return -1;
	if (r > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
		errno = 0;
		drop(s, recv(s->down, &c, 1, MSG_DONTWAIT) == 0 ? "it closed the link"
								 : "it sent what the feed does not expect");
		return -1;
	}
	if (r > 0)
		drain(s->wake[0]);
	if (r == 0 && !headed && beat(s, FEED_ALIVE) < 0) {
		drop(s, "a keep-alive could not be sent");
		return -1;
	}
	return 0;
}

/* Steps 2 and 3 of feed_serve.h, on the admitted link. */
static void run(struct feed_serve *s)
{
	bool headed = false;

	if (beat(s, FEED_ACK) < 0) {
		drop(s, "the acknowledgement could not be sent");
		return;
	}
	for (;;) {
		struct news n = news_of(s);

		if (n.abandon) {
			errno = 0;
			drop(s, "this node's own transfer failed");
			return;
		}
		if (!headed && n.stage >= S_HEAD) {
			if (send_head(s) < 0) {
				drop(s, "sending the image's head failed");
				return;
			}
			headed = true;
			if (s->status != 0) { /* node 0's error: all there is */
				s->outcome = FEED_SERVED;
				return;
			}
			continue;
		}
		if (headed && s->sent < n.have) {
			if (send_more(s, n.have) < 0)
				return;
			continue;
		}
		if (headed && s->sent == s->size && n.stage == S_VERIFIED) {
			send_tail(s);
			return;
		}
		if (wait_news(s, headed) < 0)
			return;
	}
}

static void *serve(void *arg)
{
	struct feed_serve *s = arg;

	s->outcome = FEED_NONE_CAME;
	s->down = admit(s);
	if (s->down < 0)
		return NULL;
	run(s);
	/* Not served: reset, not a FIN behind megabytes a node that stopped
	 * reading will never take; it learns at once, and the kernel keeps
	 * nothing for it. */
	if (s->outcome != FEED_SERVED)
		setsockopt(s->down, SOL_SOCKET, SO_LINGER, &(struct linger){ 1, 0 },
			   sizeof(struct linger));
	close(s->down);
	s->down = -1;
	return NULL;
}

struct feed_serve *feed_serve_start(int lfd, const uint8_t key[JOBKEY_LEN],
				    const struct feed_link *l, int silent_ms, long long admit_by,
				    struct err *e)
{
	struct feed_serve *s = calloc(1, sizeof(*s));

	if (s == NULL || (s->buf = malloc(CHUNK)) == NULL ||
	    pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		err_sys(e, EXIT_CTRUN, "image feed");
		if (s != NULL)
			free(s->buf);
		free(s);
		close(lfd);
		return NULL;
	}
	s->lfd = lfd;
	s->file = s->down = -1;
	memcpy(s->key, key, JOBKEY_LEN);
	snprintf(s->job, sizeof(s->job), "%s", l->job);
	snprintf(s->up_name, sizeof(s->up_name), "%s", l->up);
	snprintf(s->down_name, sizeof(s->down_name), "%s", l->down);
	s->link = (struct feed_link){ s->job, s->up_name, s->down_name, l->pos };
	s->silent_ms = silent_ms;
	s->admit_by = admit_by;
	sha256_init(&s->hash);
	pthread_mutex_init(&s->mu, NULL);
	errno = pthread_create(&s->th, NULL, serve, s);
	if (errno != 0) {
		err_sys(e, EXIT_CTRUN, "image feed: a thread");
		pthread_mutex_destroy(&s->mu);
		close(s->wake[0]);
		close(s->wake[1]);
		close(lfd);
		free(s->buf);
		free(s);
		return NULL;
	}
	return s;
}

void feed_serve_head(struct feed_serve *s, uint32_t status, const char *digest, uint64_t size,
		     const char *layers, uint32_t nlayers, const char *msg, int fd)
{
	int file = status == 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	char *copy = malloc((size_t)nlayers + 1);

	if (s == NULL) {
		free(copy);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (copy == NULL || (status == 0 && file < 0)) {
		s->abandon = true; /* the node below pulls for itself */
	} else {
		memcpy(copy, nlayers > 0 ? layers : "", nlayers);
		copy[nlayers] = '\0';
		s->status = status;
		snprintf(s->digest, sizeof(s->digest), "%s", digest);
		snprintf(s->msg, sizeof(s->msg), "%s", msg != NULL ? msg : "");
		s->layers = copy;
		copy = NULL;
		s->nlayers = nlayers;
		s->size = status == 0 ? size : 0;
		s->file = file;
		file = -1;
		s->stage = S_HEAD;
	}
	pthread_mutex_unlock(&s->mu);
	free(copy);
	if (file >= 0)
		close(file);
	tell(s);
}

void feed_serve_more(struct feed_serve *s, uint64_t have)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->have = have < s->size ? have : s->size;
	pthread_mutex_unlock(&s->mu);
	tell(s);
}

void feed_serve_verified(struct feed_serve *s, const uint8_t sum[FEED_SUM_LEN])
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->stage == S_HEAD) {
		s->stage = S_VERIFIED;
		s->has_sum = sum != NULL;
		if (sum != NULL)
			memcpy(s->sum, sum, FEED_SUM_LEN);
	}
	pthread_mutex_unlock(&s->mu);
	tell(s);
}

enum feed_served feed_serve_end(struct feed_serve *s, char *why, size_t size)
{
	enum feed_served r;

	if (size > 0)
		why[0] = '\0';
	if (s == NULL)
		return FEED_NONE_CAME;
	pthread_mutex_lock(&s->mu);
	if (s->stage != S_VERIFIED)
		s->abandon = true;
	pthread_mutex_unlock(&s->mu);
	tell(s);
	pthread_join(s->th, NULL);
	r = s->outcome;
	if (size > 0)
		snprintf(why, size, "%s", s->why);
	pthread_mutex_destroy(&s->mu);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->file >= 0)
		close(s->file);
	close(s->wake[0]);
	close(s->wake[1]);
	free(s->layers);
	free(s->buf);
	free(s);
	return r;
}
