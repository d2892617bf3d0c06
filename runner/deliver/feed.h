/* feed.h - a job step's image from its own nodes, not the registry (issue
 * 32, point 4; docs/images.md, "A job pulls once"; issue 41, points 4-7).
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
 * Each link starts with the downstream node's hello: its fresh nonce, its
 * name, and the name and position of the link it is for, MAC'd; the
 * upstream node takes only a hello made for its own link (its own name,
 * the name of the node below it in the step's nodelist, that node's
 * position), so a hello replayed to another link is dropped.  Everything
 * the upstream node sends on that link is MAC'd over that nonce: at once
 * an acknowledgement, then keep-alives while it has no image yet (node
 * 0 pulls), then the head (digest, size, or node 0's error), node 0's
 * layer record of the image (images/sha256-HEX.layers, registry/reuse.h:
 * what makes it a base for layer reuse; none when node 0 has none) and,
 * after the bytes, the tail (the SHA-256 of the file as sent, and the
 * record: a node's record is its image's, or the tail is refused).  A node
 * writes the bytes into its store's tmp/ and renames them into images/
 * only when the SHA-256 of what it received is the one the tail
 * announces; anything else is removed and the node pulls that digest from
 * the registry itself (one line says so).  The record is written after
 * the image is published, as a pull writes it.
 *
 * Bounds (a silent impostor on the port, a peer that hangs or stops
 * reading): a downstream node that gets no acknowledgement, keep-alive or
 * byte for `silent_ms` (FEED_SILENT_MS) gives up and pulls for itself;
 * an upstream node drops a downstream that takes nothing it sends for as
 * long (feed_serve.h).  The bytes travel in clear (docs/images.md, "Who
 * can talk to the feed"); `[registry] feed = off` turns the feed off.
 *
 * The wire (all fixed size, integers big-endian, MAC = HMAC-SHA256):
 *   down -> up:  hello  FEED_MAGIC, job "JOB.STEP", host (the sender, node k),
 *                       up (node k-1's name), pos u32 (k), nonce[32],
 *                       mac = MAC(key, "feed-hello", hello up to mac)
 *   up -> down:  beat   FEED_MAGIC, kind u32, seq u32 (0, 1, 2... on the link),
 *                       mac = MAC(key, "feed-beat", nonce, beat up to mac):
 *                       FEED_ACK (seq 0) at once, FEED_ALIVE every
 *                       silent_ms / 10 until the head, FEED_GO before it
 *                head   FEED_MAGIC, size u64, status u32 (0 ok, 1 node 0
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

#define FEED_MAGIC "CTRUNIF3"
#define FEED_LAYERS_MAX (64u << 10) /* REUSE_RECORD_MAX */
#define FEED_NONCE_LEN 32
#define FEED_SUM_LEN 32
#define FEED_SILENT_MS 20000 /* the longest a link may be silent, or a send not taken */

struct feed_hello {
	char magic[8];
	char job[64];
	char host[64]; /* the node below, which sends it */
	char up[64];   /* the node above, which it is for */
	uint32_t pos;  /* network order: the sender's position in the step (>= 1) */
	uint8_t nonce[FEED_NONCE_LEN];
	uint8_t mac[JOBKEY_LEN];
};

enum feed_beat_kind { FEED_ACK = 1, FEED_ALIVE = 2, FEED_GO = 3 };

struct feed_beat {
	char magic[8];
	uint32_t kind; /* network order: enum feed_beat_kind */
	uint32_t seq;  /* network order: 0 for the ack, then one more each */
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

/* One link of a step's chain: node pos-1 (up) feeds node pos (down). */
struct feed_link {
	const char *job; /* "JOB.STEP" */
	const char *up, *down;
	uint32_t pos;
};

/* Node `down`'s hello for link l, with a fresh nonce; and whether a
 * hello is a holder's of key, made for link l. */
int feed_hello_make(struct feed_hello *h, const uint8_t key[JOBKEY_LEN], const struct feed_link *l,
		    struct err *e);
bool feed_hello_ok(const struct feed_hello *h, const uint8_t key[JOBKEY_LEN],
		   const struct feed_link *l);

/* A beat on the link of hello h; whether b is one, the seq-th. */
void feed_beat_make(struct feed_beat *b, const uint8_t key[JOBKEY_LEN], const struct feed_hello *h,
		    uint32_t kind, uint32_t seq);
bool feed_beat_ok(const struct feed_beat *b, const uint8_t key[JOBKEY_LEN],
		  const struct feed_hello *h, uint32_t seq);

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

/* Node k's link to the node above. */
struct feed_up {
	int fd;
	struct feed_hello hello; /* this node's hello on it: the link's nonce */
	const uint8_t *key;
	int silent_ms;           /* the most it waits for the next beat or byte */
	long long deadline;      /* mono_ms: and for all of it ([registry] wait) */
};

/* After the hello: the acknowledgement, keep-alives, then the head (into
 * hd, checked: feed_head_ok).  -1 with e saying what came or did not. */
int feed_wait_head(const struct feed_up *u, struct feed_head *hd, struct err *e);

/* The record that follows head hd (its layers bytes): malloc'd, NUL
 * added, into *layers ("" when none); -1 (errno) when it does not come. */
int feed_recv_layers(const struct feed_up *u, const struct feed_head *hd, char **layers);

struct feed_serve;

/* Node k: the bytes of head hd from u, after its record `layers`
 * (feed_recv_layers), written to `tmp` (created O_EXCL) and handed to the
 * link below, s (feed_serve.h; NULL none), as they arrive; the tail checked
 * against what came, record included; then tmp renamed to `final`, or
 * removed when final is NULL (the node had the image: it only forwards).
 * Nothing is left at tmp on failure, and s is not told the image is
 * whole. */
int feed_recv_image(const struct feed_up *u, const struct feed_head *hd, const char *layers,
		    struct feed_serve *s, const char *tmp, const char *final, struct err *e);

#endif
