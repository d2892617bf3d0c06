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

int feed_hello_make(struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const char *job,
		    const char *host, struct err *e)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, FEED_MAGIC, 8);
	copy_str(h->job, sizeof(h->job), job);
	copy_str(h->host, sizeof(h->host), host);
	if (jobkey_random(h->nonce, sizeof(h->nonce), e) < 0)
		return -1;
	hello_mac(key, h, h->mac);
	return 0;
}

bool feed_hello_ok(const struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const char *job)
{
	uint8_t mac[JOBKEY_LEN];

	if (memcmp(h->magic, FEED_MAGIC, 8) != 0 || !field_ok(h->job, sizeof(h->job)) ||
	    !field_ok(h->host, sizeof(h->host)) || strcmp(h->job, job) != 0)
		return false;
	hello_mac(key, h, mac);
	return jobkey_equal(mac, h->mac);
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

int feed_recv_layers(int fd, const struct feed_head *hd, char **layers, long long deadline)
{
	size_t n = be32toh(hd->layers);

	if (n > FEED_LAYERS_MAX) {
		errno = EPROTO;
		return -1;
	}
	*layers = malloc(n + 1);
	if (*layers == NULL)
		return -1;
	if (n > 0 && feed_recv(fd, *layers, n, deadline) < 0) {
		free(*layers);
		*layers = NULL;
		return -1;
	}
	(*layers)[n] = '\0';
	return 0;
}

int feed_recv(int fd, void *buf, size_t len, long long deadline)
{
	return rdzv_recv_until(fd, buf, len, (long)deadline);
}

int feed_send(int fd, const void *buf, size_t len)
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

/* The node below went away: this node's own copy goes on without it. */
static void down_send(struct feed_down *d, const void *buf, size_t len)
{
	if (d->fd >= 0 && feed_send(d->fd, buf, len) < 0) {
		close(d->fd);
		d->fd = -1;
	}
}

int feed_send_image(int fd, const struct feed_down *d, const uint8_t key[JOBKEY_LEN],
		    const char *digest, uint64_t size, const char *layers, uint32_t nlayers,
		    struct err *e)
{
	static char buf[CHUNK];
	struct sha256_ctx h;
	struct feed_head hd;
	struct feed_tail t;
	uint8_t sum[FEED_SUM_LEN];
	uint64_t left = size;

	feed_head_make(&hd, key, &d->hello, 0, digest, size, nlayers, "");
	if (feed_send(d->fd, &hd, sizeof(hd)) < 0 ||
	    (nlayers > 0 && feed_send(d->fd, layers, nlayers) < 0))
		return err_sys(e, EXIT_CTRUN, "sending the image's head to %s", d->hello.host);
	sha256_init(&h);
	while (left > 0) {
		ssize_t n = read(fd, buf, left < CHUNK ? (size_t)left : CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? err_sys(e, EXIT_CTRUN, "reading the image")
				     : err_set(e, EXIT_CTRUN, "the image is shorter than its size");
		sha256_update(&h, (size_t)n, (const uint8_t *)buf);
		if (feed_send(d->fd, buf, (size_t)n) < 0)
			return err_sys(e, EXIT_CTRUN, "sending the image to %s", d->hello.host);
		left -= (uint64_t)n;
	}
	sha256_digest(&h, sizeof(sum), sum);
	feed_tail_make(&t, key, &d->hello, &hd, sum, layers);
	if (feed_send(d->fd, &t, sizeof(t)) < 0)
		return err_sys(e, EXIT_CTRUN, "sending the image's tail to %s", d->hello.host);
	return 0;
}

/* The bytes of hd: into out (>= 0), on to d, hashed into sum. */
static int stream(int up, const struct feed_head *hd, int out, struct feed_down *d,
		  long long deadline, uint8_t sum[FEED_SUM_LEN], struct err *e)
{
	static char buf[CHUNK];
	uint64_t left = be64toh(hd->size);
	struct sha256_ctx h;

	sha256_init(&h);
	while (left > 0) {
		struct pollfd pfd = { .fd = up, .events = POLLIN };
		long long wait = deadline - mono_ms();
		ssize_t n;

		if (wait <= 0)
			return err_set(e, EXIT_CTRUN, "the image stopped coming (%llu bytes missing)",
				       (unsigned long long)left);
		if (poll(&pfd, 1, wait > INT_MAX ? INT_MAX : (int)wait) < 0 && errno != EINTR)
			return err_sys(e, EXIT_CTRUN, "receiving the image");
		n = recv(up, buf, left < CHUNK ? (size_t)left : CHUNK, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? err_sys(e, EXIT_CTRUN, "receiving the image")
				     : err_set(e, EXIT_CTRUN, "the connection ended %llu bytes "
					       "before the image's end", (unsigned long long)left);
		sha256_update(&h, (size_t)n, (const uint8_t *)buf);
		if (out >= 0 && write_all(out, buf, (size_t)n) < 0)
			return err_sys(e, EXIT_CTRUN, "writing the image");
		down_send(d, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	sha256_digest(&h, FEED_SUM_LEN, sum);
	return 0;
}

int feed_recv_image(int up, const struct feed_hello *mine, const struct feed_head *hd,
		    const char *layers, struct feed_down *d, const uint8_t key[JOBKEY_LEN],
		    const char *tmp, const char *final, long long deadline, struct err *e)
{
	uint32_t nlayers = be32toh(hd->layers);
	uint8_t sum[FEED_SUM_LEN];
	struct feed_head dhd;
	struct feed_tail t, dt;
	int out = -1, rv = -1;

	if (d->fd >= 0) {
		feed_head_make(&dhd, key, &d->hello, 0, hd->digest, be64toh(hd->size), nlayers, "");
		down_send(d, &dhd, sizeof(dhd));
		if (nlayers > 0)
			down_send(d, layers, nlayers);
	}
	if (tmp != NULL) {
		out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   STORE_FILE_MODE);
		if (out < 0)
			return err_sys(e, EXIT_CTRUN, "%s", tmp);
	}
	if (stream(up, hd, out, d, deadline, sum, e) < 0)
		goto out;
	if (feed_recv(up, &t, sizeof(t), deadline) < 0) {
		err_sys(e, EXIT_CTRUN, "receiving the image's tail");
		goto out;
	}
	if (!feed_tail_ok(&t, key, mine, hd, layers) || memcmp(t.sum, sum, FEED_SUM_LEN) != 0) {
		err_set(e, EXIT_CTRUN, "the image received is not the one node 0 sent (its "
			"SHA-256 or the tail's MAC, which covers its layer record, is wrong): "
			"refused");
		goto out;
	}
	if (d->fd >= 0) {
		feed_tail_make(&dt, key, &d->hello, &dhd, t.sum, layers);
		down_send(d, &dt, sizeof(dt));
	}
	if (out >= 0 && (fchmod(out, STORE_FILE_MODE) < 0 || close(out) < 0)) {
		out = -1;
		err_sys(e, EXIT_CTRUN, "%s", tmp);
		goto out;
	}
	out = -1;
	if (tmp != NULL && rename(tmp, final) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", final);
		goto out;
	}
	rv = 0;
out:
	if (out >= 0)
		close(out);
	if (rv < 0 && tmp != NULL)
		unlink(tmp);
	return rv;
}
