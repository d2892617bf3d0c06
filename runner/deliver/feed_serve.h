/* feed_serve.h - a node's side of the link to the node below it in the
 * image feed (feed.h), in a thread of its own, from the start of the
 * node's ctrun to the end of its part:
 *
 *   1. it admits the node below on the feed's listening socket, as the
 *      rendezvous admits its ranks (runner/net/lobby.h): every connection
 *      read without blocking in one loop, strangers dropped at their
 *      deadline or when a newcomer needs their place, and only a hello
 *      made for this very link taken;
 *   2. it acknowledges that hello at once, and sends a keep-alive every
 *      silent_ms / 10 while this node has no image yet (node 0 pulls,
 *      node k waits for its own upstream), so the node below can tell a
 *      slow pull from a silent impostor;
 *   3. it sends the head, the record and the image's bytes as this node
 *      has them, read from this node's file as it grows (so a slow node
 *      below never slows this node's own reception, and one that comes
 *      late still gets everything), and the tail once this node verified
 *      the whole (the tail's SHA-256 is of the bytes sent, and must be the
 *      verified one).
 *
 * Every send is under a deadline: a node below that takes nothing for
 * silent_ms is dropped, and pulls for itself.
 */
#ifndef CTRUN_FEED_SERVE_H
#define CTRUN_FEED_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "feed.h"

#define FEED_HELLO_MS 5000 /* a connection's deadline for its hello */

/* Starts serving link l (this node is l->up) on the listening socket lfd
 * (taken over: closed at the end), admitting its node below until
 * admit_by (mono_ms).  NULL with e set when no thread can be made (lfd
 * closed). */
struct feed_serve *feed_serve_start(int lfd, const uint8_t key[JOBKEY_LEN],
				    const struct feed_link *l, int silent_ms, long long admit_by,
				    struct err *e);

/* The head is known.  Status 0: the image is size bytes of the file at fd
 * (duplicated: the caller keeps fd), with its record (layers, nlayers
 * bytes); status 1: node 0's error msg, nothing more follows. */
void feed_serve_head(struct feed_serve *s, uint32_t status, const char *digest, uint64_t size,
		     const char *layers, uint32_t nlayers, const char *msg, int fd);
/* The first `have` bytes of the image are in the file. */
void feed_serve_more(struct feed_serve *s, uint64_t have);
/* The image is whole and its SHA-256 is sum (NULL: node 0's own file,
 * whatever it hashes to): the tail may go. */
void feed_serve_verified(struct feed_serve *s, const uint8_t sum[FEED_SUM_LEN]);

enum feed_served {
	FEED_SERVED,    /* the node below has it all */
	FEED_NONE_CAME, /* none was admitted by admit_by */
	FEED_STALLED,   /* it took nothing for silent_ms: dropped */
	FEED_GONE,      /* it closed the link or broke the protocol, or this node gave up */
};
/* The end of this node's part: when the image was verified, waits until
 * the node below has all of it (or is dropped; or, none admitted yet,
 * until admit_by); otherwise the link is closed now (the node below pulls
 * for itself).  What became of the node below, why (when stalled or gone)
 * in `why`; s is freed.  NULL s: FEED_NONE_CAME. */
enum feed_served feed_serve_end(struct feed_serve *s, char *why, size_t size);

#endif
