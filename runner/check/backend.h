/* backend.h - what check and bench run their collectives over: NCCL on
 * GPUs (backend_nccl.c: libcudart and libnccl, dlopen'd) or the socket
 * ring on CPUs (backend_socket.c).  check and bench call the operations
 * and never ask which backend they hold; the session (wsession.h) votes
 * which one every rank can use.
 *
 * Buffers belong to the backend (device memory with NCCL, host memory
 * with sockets): the caller reaches their bytes only through upload and
 * download, so the same code checks data on either. */
#ifndef CTRUN_BACKEND_H
#define CTRUN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "busbw.h"
#include "err.h"
#include "rank.h"
#include "rendezvous.h"

/* One "Using devices" line of bench's preamble. */
struct bench_device {
	long rank, pid;
	int device;      /* CUDA ordinal, -1 on the socket backend */
	char host[64];
	char bus[32];    /* "0000:07:00" */
	char name[96];
};

struct backend;

/* One collective: NCCL's semantics (send == recv, or busbw.h's offsets:
 * in place; count per rank as NCCL counts it; root for broadcast). */
struct coll_call {
	enum coll coll;
	const void *send;
	void *recv;
	size_t count;
	enum dtype type;
	long root;
};

struct backend_ops {
	const char *name; /* "nccl", "socket": the word in reports and --backend */
	/* Can this rank use the backend?  NULL: every rank can.  On false,
	 * `why` may say why (what backend_fallback_note prints). */
	bool (*usable)(const struct rank_row *row, char *why, size_t size);
	/* Can it run collective c on type t?  On false, `why` ends the
	 * sentence "bench: all_reduce of half ...". */
	bool (*supports)(enum coll c, enum dtype t, char *why, size_t size);
	/* The line after bench's preamble ("NCCL version 2.28.9"), or NULL. */
	const char *(*banner)(void);
	/* Fills d->device, bus and name for rank `row` (the rest is the caller's). */
	void (*describe)(const struct rank_row *row, struct bench_device *d);

	/* A communicator over every rank of `r`; collective, every rank calls it. */
	int (*open)(struct backend *b, struct rdzv *r, const struct rank_row *row, struct err *e);
	void (*close)(struct backend *b);

	int (*alloc)(struct backend *b, size_t bytes, void **p, struct err *e);
	void (*free)(struct backend *b, void *p);
	/* The largest buffer total this rank may allocate (SIZE_MAX: no limit known). */
	size_t (*mem_budget)(struct backend *b);
	/* Zeroes, fills from and copies to host memory; done when they return. */
	int (*clear)(struct backend *b, void *buf, size_t bytes, struct err *e);
	int (*upload)(struct backend *b, void *buf, const void *host, size_t bytes, struct err *e);
	int (*download)(struct backend *b, void *host, const void *buf, size_t bytes,
			struct err *e);

	/* Starts one collective; sync waits for every collective started
	 * and notices a failed peer. */
	int (*run)(struct backend *b, const struct coll_call *call, struct err *e);
	int (*sync)(struct backend *b, struct err *e);
};

/* A backend in use: its operations and its communicator. */
struct backend {
	const struct backend_ops *ops;
	void *impl; /* the backend's own (struct nccl_comm, struct sock_comm) */
};

extern const struct backend_ops backend_nccl, backend_socket;

/* Every backend, most wanted first (the session's vote takes the first
 * that every rank can use); NULL-terminated. */
extern const struct backend_ops *const backend_table[];

/* The table entry named `name`, or NULL. */
const struct backend_ops *backend_find(const char *name);

/* Opens `ops` into b (b->ops set even on failure); backend_close undoes
 * it, any number of times. */
int backend_open(struct backend *b, const struct backend_ops *ops, struct rdzv *r,
		 const struct rank_row *row, struct err *e);
void backend_close(struct backend *b);

#endif
