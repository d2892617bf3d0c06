/* rendezvous_int.h - the rendezvous's messages and the helpers its two sides
 * share (rdzv_root.c: rank 0; rendezvous.c: the others).  Private to
 * runner/net/. */
#ifndef CTRUN_RENDEZVOUS_INT_H
#define CTRUN_RENDEZVOUS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "jobkey.h"
#include "rendezvous.h"
#include "util.h"

#define RDZV_NONCE_LEN 32

/* The wire format's name and version: "CTRUNRZ" and one digit, bumped
 * whenever a message's layout (hello, status, what check and bench
 * gather) changes, so ranks of two ctrun versions refuse each other by
 * name instead of misreading each other. */
#define MAGIC "CTRUNRZ4"
#define MAGIC_NAME_LEN 7
#define HELLO_TIMEOUT_MS 5000 /* each connection's deadline for its hello, then its proof */
/* Connections that have not proven the key yet (strangers' places): when
 * all are taken, a newcomer replaces the oldest, so a flood cannot keep a
 * rank out; a hello MAC'd with the key moves its connection out of them. */
#define MAX_PENDING 64
#define MAX_PROVING 256   /* key-MAC'd hellos waiting for their proof (key holders only) */
#define ACCEPT_BATCH 64   /* connections accepted per round of rank 0's loop */
#define ROOT_GRACE_MS 2000

/* The handshake (docs/bench.md, "Who may join"): the job string is public,
 * so both sides prove they hold the job's rendezvous key (jobkey.h):
 *   rank r -> rank 0: hello (with the rank's nonce), MAC'd:
 *                     HMAC(key, "hello", hello without its mac)
 *   rank 0 -> rank r: challenge: rank 0's nonce and
 *                     HMAC(key, "root", hello, nonce0)
 *   rank r -> rank 0: proof: HMAC(key, "rank", hello, nonce0)
 *   rank 0 -> rank r: status, once every rank is in (or the verdict)
 * The MACs cover the whole hello (job, rank, world, host, nonce), so what a
 * rank claims is what it proved, and a reply of one connection is no
 * answer on another.  The hello's own MAC tells rank 0 at once, without a
 * round trip, which connections are a rank's (only they leave the
 * strangers' places); the proof over rank 0's fresh nonce is what admits
 * one (a hello replayed by someone who read the traffic proves nothing).
 * A hello whose MAC is wrong still gets rank 0's challenge, so a rank with
 * another key learns that rank 0 does not hold its key, and is then
 * dropped; a connection that fails the proof is dropped without a word
 * and counts for nothing. */
struct hello {
	char magic[8];
	uint32_t rank, world; /* network order */
	char job[64];
	char host[64];
	uint8_t nonce[RDZV_NONCE_LEN];
	uint8_t mac[JOBKEY_LEN];
};

/* Every reply of rank 0 starts with the magic and a kind (in every
 * version): a status, or the challenge. */
#define RDZV_KIND_CHALLENGE 0x43484c47u /* "CHLG" */
struct reply_head {
	char magic[8];
	uint32_t kind; /* enum rdzv_fail or RDZV_KIND_CHALLENGE, network order */
};

struct challenge {
	struct reply_head head;
	uint8_t nonce[RDZV_NONCE_LEN];
	uint8_t mac[JOBKEY_LEN];
};

struct status {
	char magic[8];
	uint32_t kind; /* enum rdzv_fail, network order; RDZV_OK = go */
	char msg[512];
};

/* The hello's own MAC: HMAC(key, "hello", the hello up to its mac). */
void rdzv_hello_mac(const uint8_t key[JOBKEY_LEN], const struct hello *h, uint8_t mac[JOBKEY_LEN]);
/* The MAC of `role` ("root" or "rank") over a hello and rank 0's nonce. */
void rdzv_auth_mac(const uint8_t key[JOBKEY_LEN], const char *role, const struct hello *h,
		   const uint8_t nonce0[RDZV_NONCE_LEN], uint8_t mac[JOBKEY_LEN]);

/* At most size - 1 bytes of src, always terminated. */
void rdzv_copy_str(char *dst, size_t size, const char *src);
/* Fills e (code 1) and r->fail; returns -1. */
int rdzv_fail_set(struct rdzv *r, struct err *e, enum rdzv_fail kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rdzv_tune(int fd);
void rdzv_send_status(int fd, enum rdzv_fail kind, const char *msg);

/* Rank 0's side of rdzv_open (rdzv_root.c). */
int rdzv_root_open(struct rdzv *r, const struct rdzv_opts *o, struct err *e);

#endif
