/* lobby.h - the connections a listening socket accepted whose hello (the
 * fixed-size first message of a protocol) has not come whole yet, read in
 * one poll loop without blocking, as rank 0 of the rendezvous reads its
 * ranks' hellos (rdzv_root.c): a silent or slow connection (a port
 * scanner, a health check, another user's idle connections) holds up no
 * one and goes at its deadline; at most LOBBY_MAX wait at once and a
 * newcomer takes the oldest one's place, so a flood cannot fill the
 * lobby for good; and a newcomer's hello, usually there as it is
 * accepted, is read and judged at once, before a later newcomer could
 * push it out.
 *
 * Used for the socket collectives' peers (sock_peer.c) and for the node
 * below in the image feed (runner/deliver/feed_serve.c).
 */
#ifndef CTRUN_LOBBY_H
#define CTRUN_LOBBY_H

#include <stdbool.h>
#include <stddef.h>

#define LOBBY_MAX 64
#define LOBBY_HELLO_MAX 4096

/* Whether a whole hello is a peer's (true), or a stranger's (false: its
 * connection is closed without a word). */
typedef bool lobby_judge(const void *hello, void *ctx);

struct lobby;
/* A lobby for hellos of `len` bytes (1..LOBBY_HELLO_MAX), each due within
 * hello_ms of its connection.  NULL: no memory. */
struct lobby *lobby_new(size_t len, int hello_ms);
void lobby_free(struct lobby *l); /* closes what still waits; NULL is fine */

/* Accepts from lfd and reads every waiting connection until one's hello
 * is judged a peer's: its descriptor (blocking), its hello copied into
 * `hello`.  -1 when `deadline` (mono_ms) passes (errno ETIMEDOUT), or when
 * `wake` (-1: none) can be read (errno EINTR; nothing is read from it).
 * Connections not judged yet stay in l for the next call. */
int lobby_accept(struct lobby *l, int lfd, lobby_judge *judge, void *ctx, void *hello,
		 int wake, long long deadline);

#endif
