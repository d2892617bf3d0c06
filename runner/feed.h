/* feed.h - a job step's image from its own nodes, not the registry (issue
 * 32, point 4; docs/images.md, "A job pulls once").
 *
 * In node and task mode with a node-local store and a step on several
 * nodes, only the step's node 0 resolves and pulls; node k (its first
 * task) gets the digest and the image file from node k-1 over TCP and
 * forwards each chunk to node k+1 as it arrives: a pipelined chain, so
 * every link carries the image once and the whole step takes about one
 * transfer more than node 0's pull, whatever its node count.
 *
 * Trust: as the rendezvous (runner/net/), only holders of the job's key
 * take part: the key is jobkey_derive(secret, "imagefeed", job, step).
 * Each link starts with the downstream node's hello (its fresh nonce,
 * MAC'd); everything the upstream node sends on that link is MAC'd over
 * that nonce: the head (digest, size, or node 0's error), node 0's layer
 * record of the image (images/sha256-HEX.layers, registry/reuse.h: what
 * makes it a base for layer reuse; none when node 0 has none) and, after
 * the bytes, the tail (the SHA-256 of the file as node 0 read it, and
 * the record: a node's record is its image's, or the tail is refused).  A node
 * writes the bytes into its store's tmp/ and renames them into images/
 * only when the SHA-256 of what it received is the one the tail
 * announces; anything else is removed and the node pulls that digest from
 * the registry itself (one line says so).  The record is written after
 * the image is published, as a pull writes it.
 *
 * The wire (all fixed size, integers big-endian, MAC = HMAC-SHA256):
 *   down -> up:  hello  FEED_MAGIC, job "JOB.STEP", host, nonce[32],
 *                       mac = MAC(key, "feed-hello", hello up to mac)
 *   up -> down:  head   FEED_MAGIC, size u64, status u32 (0 ok, 1 node 0
 *                       failed: msg), layers u32 (the record's length, at
 *                       most FEED_LAYERS_MAX; 0 none), digest[80], msg[256],
 *                       mac = MAC(key, "feed-head", nonce, head up to mac)
 *                layers bytes of the record (status 0 only)
 *                size bytes of the image (status 0 only)
 *                tail   sum[32], mac = MAC(key, "feed-tail", nonce, head, sum,
 *                       record)
 */
#ifndef CTRUN_FEED_H
#define CTRUN_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "jobkey.h"

#define FEED_MAGIC "CTRUNIF2"
#define FEED_LAYERS_MAX (64u << 10) /* REUSE_RECORD_MAX */
#define FEED_NONCE_LEN 32
#define FEED_SUM_LEN 32

struct feed_hello {
	char magic[8];
	char job[64];
	char host[64];
	uint8_t nonce[FEED_NONCE_LEN];
	uint8_t mac[JOBKEY_LEN];
};

struct feed_head {
	char magic[8];
	uint64_t size;   /* network order */
	uint32_t status; /* network order: 0 ok, 1 node 0 failed (msg) */
	uint32_t layers; /* network order: the record's length (0 none) */
	char digest[80];
	char msg[256];
	uint8_t mac[JOBKEY_LEN];
};

struct feed_tail {
	uint8_t sum[FEED_SUM_LEN];
	uint8_t mac[JOBKEY_LEN];
};

/* The link's hello, with a fresh nonce; and whether one is a holder's of
 * key for this job step. */
int feed_hello_make(struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const char *job,
		    const char *host, struct err *e);
bool feed_hello_ok(const struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const char *job);

/* A head for the link of hello h (msg: node 0's error when status is 1;
 * layers: the length of the record that follows). */
void feed_head_make(struct feed_head *hd, const uint8_t key[JOBKEY_LEN],
		    const struct feed_hello *h, uint32_t status, const char *digest,
		    uint64_t size, uint32_t layers, const char *msg);
/* Whether hd came from a holder of key on the link of h, and says
 * something sane (a valid digest when status is 0, a record of at most
 * FEED_LAYERS_MAX bytes, none with status 1). */
bool feed_head_ok(const struct feed_head *hd, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h);
/* The tail covers the record (hd's layers bytes at `layers`) too. */
void feed_tail_make(struct feed_tail *t, const uint8_t key[JOBKEY_LEN],
		    const struct feed_hello *h, const struct feed_head *hd,
		    const uint8_t sum[FEED_SUM_LEN], const char *layers);
bool feed_tail_ok(const struct feed_tail *t, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h, const struct feed_head *hd, const char *layers);

/* The record that follows head hd (its layers bytes): malloc'd, NUL
 * added, into *layers ("" when none); -1 (errno) when it does not come. */
int feed_recv_layers(int fd, const struct feed_head *hd, char **layers, long long deadline);

/* Exactly len bytes, until `deadline` (mono_ms; errno ETIMEDOUT then);
 * EOF is -1 with errno ECONNRESET. */
int feed_recv(int fd, void *buf, size_t len, long long deadline);
int feed_send(int fd, const void *buf, size_t len);

/* One link's downstream side: where the bytes go. */
struct feed_down {
	int fd;                  /* -1: no node below, or it went away */
	struct feed_hello hello; /* its hello (the link's nonce) */
};

/* Node 0: sends the head, the record (layers, nlayers bytes; 0 none), the
 * file's size bytes and the tail to the node below (d->fd), reading from
 * fd. */
int feed_send_image(int fd, const struct feed_down *d, const uint8_t key[JOBKEY_LEN],
		    const char *digest, uint64_t size, const char *layers, uint32_t nlayers,
		    struct err *e);

/* Node k: the bytes of head hd from up (the link of hello mine), after
 * its record `layers` (feed_recv_layers), written to `tmp` (when not NULL:
 * created O_EXCL) and forwarded with the record to d as they arrive; the
 * tail checked against what came, record included; then tmp renamed to
 * `final`.  Nothing is left at tmp on failure.  d->fd is closed and set
 * to -1 if the node below goes away (this node's copy goes on). */
int feed_recv_image(int up, const struct feed_hello *mine, const struct feed_head *hd,
		    const char *layers, struct feed_down *d, const uint8_t key[JOBKEY_LEN],
		    const char *tmp, const char *final, long long deadline, struct err *e);

#endif
