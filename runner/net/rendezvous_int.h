/* rendezvous_int.h - the rendezvous's messages and the helpers its two sides
 * share (rdzv_root.c: rank 0; rendezvous.c: the others).  Private to
 * runner/net/. */
#ifndef CTRUN_RENDEZVOUS_INT_H
#define CTRUN_RENDEZVOUS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "rendezvous.h"

/* The wire format's name and version: "CTRUNRZ" and one digit, bumped
 * whenever a message's layout (hello, status, what check and bench
 * gather) changes, so ranks of two ctrun versions refuse each other by
 * name instead of misreading each other. */
#define MAGIC "CTRUNRZ2"
#define MAGIC_NAME_LEN 7
#define HELLO_TIMEOUT_MS 5000
#define MAX_PENDING 64  /* connections that have not said hello yet */
#define ROOT_GRACE_MS 2000

/* What a connecting rank says first, and rank 0's verdict. */
struct hello {
	char magic[8];
	uint32_t rank, world; /* network order */
	char job[64];
	char host[64];
};

struct status {
	char magic[8];
	uint32_t kind; /* enum rdzv_fail, network order; RDZV_OK = go */
	char msg[512];
};

long rdzv_now_ms(void);
/* Receives exactly len bytes, giving up at `deadline` (errno ETIMEDOUT);
 * a negative deadline waits for ever. */
int rdzv_recv_until(int fd, void *buf, size_t len, long deadline);
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
