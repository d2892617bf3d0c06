/* feed_wire.c - the messages and the byte stream of the image feed between
 * a step's nodes (see feed.h). */
#include "feed.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "feed_serve.h"
#include "rendezvous.h"
#include "reuse.h"
#include "store.h"
#include "util.h"

_Static_assert(FEED_LAYERS_MAX == REUSE_RECORD_MAX, "the feed carries any record");

#define CHUNK (1 << 20)

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src != NULL ? src : "", size - 1);

	memset(dst, 0, size);
	memcpy(dst, src != NULL ? src : "", n);
}

/* A fixed-size string field: terminated within its size. */
static bool field_ok(const char *f, size_t size)
{
	return memchr(f, '\0', size) != NULL;
}

static void hello_mac(const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		      uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { "feed-hello", 11 },
						{ h, offsetof(struct feed_hello, mac) } },
		   2, mac);
}

int feed_hello_make(struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const struct feed_link *l,
		    struct err *e)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, FEED_MAGIC, 8);
	copy_str(h->job, sizeof(h->job), l->job);
	copy_str(h->host, sizeof(h->host), l->down);
	copy_str(h->up, sizeof(h->up), l->up);
	h->pos = htobe32(l->pos);
	if (jobkey_random(h->nonce, sizeof(h->nonce), e) < 0)
		return -1;
	hello_mac(key, h, h->mac);
	return 0;
}

bool feed_hello_ok(const struct feed_hello *h, const uint8_t key[JOBKEY_LEN],
		   const struct feed_link *l)
{
	uint8_t mac[JOBKEY_LEN];

	/* Made for this link: a hello replayed to another is no one's. */
	if (memcmp(h->magic, FEED_MAGIC, 8) != 0 || !field_ok(h->job, sizeof(h->job)) ||
	    !field_ok(h->host, sizeof(h->host)) || !field_ok(h->up, sizeof(h->up)) ||
	    strcmp(h->job, l->job) != 0 || strcmp(h->host, l->down) != 0 ||
	    strcmp(h->up, l->up) != 0 || be32toh(h->pos) != l->pos)
		return false;
	hello_mac(key, h, mac);
	return jobkey_equal(mac, h->mac);
}

static void beat_mac(const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		     const struct feed_beat *b, uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { "feed-beat", 10 },
						{ h->nonce, sizeof(h->nonce) },
						{ b, offsetof(struct feed_beat, mac) } },
		   3, mac);
}

void feed_beat_make(struct feed_beat *b, const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		    uint32_t kind, uint32_t seq)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->magic, FEED_MAGIC, 8);
	b->kind = htobe32(kind);
	b->seq = htobe32(seq);
	beat_mac(key, h, b, b->mac);
}

bool feed_beat_ok(const struct feed_beat *b, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h, uint32_t seq)
{
	uint32_t kind = be32toh(b->kind);
	uint8_t mac[JOBKEY_LEN];

	/* The ack first and only first: in order, none replayed. */
	if (memcmp(b->magic, FEED_MAGIC, 8) != 0 || be32toh(b->seq) != seq ||
	    (seq == 0) != (kind == FEED_ACK) || (kind != FEED_ACK && kind != FEED_ALIVE &&
						 kind != FEED_GO))
		return false;
	beat_mac(key, h, b, mac);
	return jobkey_equal(mac, b->mac);
}

static void head_mac(const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		     const struct feed_head *hd, uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { "feed-head", 10 },
						{ h->nonce, sizeof(h->nonce) },
						{ hd, offsetof(struct feed_head, mac) } },
		   3, mac);
}

void feed_head_make(struct feed_head *hd, const uint8_t key[JOBKEY_LEN],
		    const struct feed_hello *h, uint32_t status, const char *digest,
		    uint64_t size, uint32_t layers, const char *msg)
{
	memset(hd, 0, sizeof(*hd));
	memcpy(hd->magic, FEED_MAGIC, 8);
	hd->size = htobe64(size);
	hd->status = htobe32(status);
	hd->layers = htobe32(layers);
	copy_str(hd->digest, sizeof(hd->digest), digest);
	copy_str(hd->msg, sizeof(hd->msg), msg);
	head_mac(key, h, hd, hd->mac);
}

bool feed_head_ok(const struct feed_head *hd, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h)
{
	uint8_t mac[JOBKEY_LEN];
	uint32_t status = be32toh(hd->status), layers = be32toh(hd->layers);

	if (memcmp(hd->magic, FEED_MAGIC, 8) != 0 || !field_ok(hd->digest, sizeof(hd->digest)) ||
	    !field_ok(hd->msg, sizeof(hd->msg)) || status > 1 ||
	    (status == 0 && !digest_valid(hd->digest)) || layers > FEED_LAYERS_MAX ||
	    (status == 1 && layers > 0))
		return false;
	head_mac(key, h, hd, mac);
	return jobkey_equal(mac, hd->mac);
}

static void tail_mac(const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		     const struct feed_head *hd, const uint8_t sum[FEED_SUM_LEN],
		     const char *layers, uint8_t mac[JOBKEY_LEN])
{
	size_t n = be32toh(hd->layers);

	jobkey_mac(key, (struct jobkey_part[]){ { "feed-tail", 10 },
						{ h->nonce, sizeof(h->nonce) },
						{ hd, offsetof(struct feed_head, mac) },
						{ sum, FEED_SUM_LEN },
						{ n > 0 ? layers : "", n } },
		   5, mac);
}

void feed_tail_make(struct feed_tail *t, const uint8_t key[JOBKEY_LEN],
		    const struct feed_hello *h, const struct feed_head *hd,
		    const uint8_t sum[FEED_SUM_LEN], const char *layers)
{
	memcpy(t->sum, sum, FEED_SUM_LEN);
	tail_mac(key, h, hd, sum, layers, t->mac);
}

bool feed_tail_ok(const struct feed_tail *t, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h, const struct feed_head *hd, const char *layers)
{
	uint8_t mac[JOBKEY_LEN];

	tail_mac(key, h, hd, t->sum, layers, mac);
	return jobkey_equal(mac, t->mac);
}

/* The next len bytes of the link: within silent_ms, and by the deadline. */
static int recv_next(const struct feed_up *u, void *buf, size_t len)
{
	long long by = mono_ms() + u->silent_ms;

	return rdzv_recv_until(u->fd, buf, len, (long)(by < u->deadline ? by : u->deadline));
}

/* Why nothing (more) came: seq beats so far. */
static int silence(const struct feed_up *u, uint32_t seq, struct err *e)
{
	int s = u->silent_ms / 1000;

	if (errno == ETIMEDOUT && mono_ms() >= u->deadline)
		return err_set(e, EXIT_CTRUN, "no image before [registry] wait ran out");
	if (errno == ETIMEDOUT && seq == 0)
		return err_set(e, EXIT_CTRUN, "no acknowledgement within %d s: what listens there is "
			       "not a node of this step (or not this version of ctrun)", s);
	if (errno == ETIMEDOUT)
		return err_set(e, EXIT_CTRUN, "no keep-alive within %d s: that node's ctrun hangs", s);
	if (seq == 0)
		return err_sys(e, EXIT_CTRUN, "no acknowledgement: the link closed (our hello was "
			       "not taken there)");
	return err_sys(e, EXIT_CTRUN, "the link closed before the image came");
}

static int refused(struct err *e)
{
	return err_set(e, EXIT_CTRUN, "what came is not from a node of the job (no proof of the "
		       "job's key): refused");
}

int feed_wait_head(const struct feed_up *u, struct feed_head *hd, struct err *e)
{
	struct feed_beat b;
	uint32_t seq = 0;

	/* The ack at once, keep-alives while node 0 pulls, then the head. */
	for (;; seq++) {
		if (recv_next(u, &b, sizeof(b)) < 0)
			return silence(u, seq, e);
		if (!feed_beat_ok(&b, u->key, &u->hello, seq))
			return refused(e);
		if (be32toh(b.kind) == FEED_GO)
			break;
	}
	if (recv_next(u, hd, sizeof(*hd)) < 0)
		return silence(u, seq, e);
	return feed_head_ok(hd, u->key, &u->hello) ? 0 : refused(e);
}

int feed_recv_layers(const struct feed_up *u, const struct feed_head *hd, char **layers)
{
	size_t n = be32toh(hd->layers);

	if (n > FEED_LAYERS_MAX) {
		errno = EPROTO;
		return -1;
	}
	*layers = malloc(n + 1);
	if (*layers == NULL)
		return -1;
	if (n > 0 && recv_next(u, *layers, n) < 0) {
		free(*layers);
		*layers = NULL;
		return -1;
	}
	(*layers)[n] = '\0';
	return 0;
}

/* The bytes of hd: into out, hashed into sum, handed to the link below
 * as they are written.  Each read within silent_ms: an upstream node
 * that hangs mid-way is let go. */
static int stream(const struct feed_up *u, const struct feed_head *hd, int out,
		  struct feed_serve *s, char *buf, uint8_t sum[FEED_SUM_LEN], struct err *e)
{
	uint64_t size = be64toh(hd->size), got = 0;
	struct sha256_ctx h;

	sha256_init(&h);
	while (got < size) {
		struct pollfd pfd = { .fd = u->fd, .events = POLLIN };
		long long now = mono_ms(), by = now + u->silent_ms;
		ssize_t n;
		int r;

		by = by < u->deadline ? by : u->deadline;
		r = poll(&pfd, 1, by - now > INT_MAX ? INT_MAX : (int)(by - now));
		if (r < 0 && errno != EINTR)
			return err_sys(e, EXIT_CTRUN, "receiving the image");
		if (r == 0)
			return err_set(e, EXIT_CTRUN, "the image stopped coming: nothing for %d s "
				       "(%llu bytes missing)", (int)((by - now) / 1000),
				       (unsigned long long)(size - got));
		n = recv(u->fd, buf, size - got < CHUNK ? (size_t)(size - got) : CHUNK, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? err_sys(e, EXIT_CTRUN, "receiving the image")
				     : err_set(e, EXIT_CTRUN, "the connection ended %llu bytes "
					       "before the image's end", (unsigned long long)(size - got));
		sha256_update(&h, (size_t)n, (const uint8_t *)buf);
		if (write_all(out, buf, (size_t)n) < 0)
			return err_sys(e, EXIT_CTRUN, "writing the image");
		got += (uint64_t)n;
		feed_serve_more(s, got);
	}
	sha256_digest(&h, FEED_SUM_LEN, sum);
	return 0;
}

int feed_recv_image(const struct feed_up *u, const struct feed_head *hd, const char *layers,
		    struct feed_serve *s, const char *tmp, const char *final, struct err *e)
{
	uint8_t sum[FEED_SUM_LEN];
	struct feed_tail t;
	char *buf = malloc(CHUNK);
	int out = -1, rv = -1;

	if (buf == NULL)
		return err_sys(e, EXIT_CTRUN, "image feed");
	/* Read back by the link below (feed_serve.h): O_RDWR. */
	out = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, STORE_FILE_MODE);
	if (out < 0) {
		free(buf);
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	}
	feed_serve_head(s, 0, hd->digest, be64toh(hd->size), layers, be32toh(hd->layers), "", out);
	if (stream(u, hd, out, s, buf, sum, e) < 0)
		goto out;
	if (recv_next(u, &t, sizeof(t)) < 0) {
		err_sys(e, EXIT_CTRUN, "receiving the image's tail");
		goto out;
	}
	if (!feed_tail_ok(&t, u->key, &u->hello, hd, layers) ||
	    memcmp(t.sum, sum, FEED_SUM_LEN) != 0) {
		err_set(e, EXIT_CTRUN, "the image received is not the one node 0 sent (its "
			"SHA-256 or the tail's MAC, which covers its layer record, is wrong): "
			"refused");
		goto out;
	}
	feed_serve_verified(s, sum);
	if (fchmod(out, STORE_FILE_MODE) < 0 || close(out) < 0) {
		out = -1;
		err_sys(e, EXIT_CTRUN, "%s", tmp);
		goto out;
	}
	out = -1;
	if (final != NULL && rename(tmp, final) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", final);
		goto out;
	}
	if (final == NULL)
		unlink(tmp);
	rv = 0;
out:
	if (out >= 0)
		close(out);
	if (rv < 0)
		unlink(tmp);
	free(buf);
	return rv;
}
