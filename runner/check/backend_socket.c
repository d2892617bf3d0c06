/* backend_socket.c - the socket backend of check and bench: the
 * operations of backend.h over runner/net/coll_socket.c (a TCP ring, a
 * mesh for alltoall).  Buffers are host memory; every operation is done
 * when it returns, so sync has nothing to wait for. */
#include "backend.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_socket.h"

static bool sock_be_supports(enum coll c, enum dtype t, char *why, size_t size)
{
	if (!coll_is_reduction(c) || sock_can_reduce(t))
		return true;
	snprintf(why, size, "needs the nccl backend (GPUs); the socket backend sums 8- to 64-bit "
		 "types");
	return false;
}

static void sock_be_describe(const struct rank_row *r, struct bench_device *d)
{
	(void)r;
	d->device = -1;
	snprintf(d->bus, sizeof(d->bus), "-");
	snprintf(d->name, sizeof(d->name), "CPU (socket backend)");
}

static int sock_be_open(struct backend *b, struct rdzv *r, const struct rank_row *row,
			struct err *e)
{
	struct sock_comm *c = malloc(sizeof(*c));

	(void)row;
	if (c == NULL)
		return err_set(e, 1, "out of memory");
	*c = (struct sock_comm){ .next_fd = -1, .prev_fd = -1, .listen_fd = -1 };
	/* Set before the ring is up: close frees what a failed open left. */
	b->impl = c;
	return sock_comm_open(c, r, e);
}

static void sock_be_close(struct backend *b)
{
	sock_comm_close(b->impl);
	free(b->impl);
}

static int sock_be_alloc(struct backend *b, size_t bytes, void **p, struct err *e)
{
	(void)b;
	*p = malloc(bytes + 1);
	if (*p == NULL)
		return err_set(e, 1, "cannot allocate %zu bytes", bytes);
	/* Touch every page now, not in the first timed iteration. */
	memset(*p, 0, bytes);
	return 0;
}

static void sock_be_free(struct backend *b, void *p)
{
	(void)b;
	free(p);
}

static size_t sock_be_mem_budget(struct backend *b)
{
	(void)b;
	return SIZE_MAX;
}

static int sock_be_clear(struct backend *b, void *buf, size_t bytes, struct err *e)
{
	(void)b;
	(void)e;
	memset(buf, 0, bytes);
	return 0;
}

static int sock_be_upload(struct backend *b, void *buf, const void *host, size_t bytes,
			  struct err *e)
{
	(void)b;
	(void)e;
	memmove(buf, host, bytes);
	return 0;
}

static int sock_be_download(struct backend *b, void *host, const void *buf, size_t bytes,
			    struct err *e)
{
	(void)b;
	(void)e;
	memmove(host, buf, bytes);
	return 0;
}

static int sock_be_run(struct backend *b, const struct coll_call *k, struct err *e)
{
	struct sock_comm *sc = b->impl;

	switch (k->coll) {
	case COLL_ALL_REDUCE: return sock_all_reduce(sc, k->send, k->recv, k->count, k->type, e);
	case COLL_ALL_GATHER: return sock_all_gather(sc, k->send, k->recv, k->count, k->type, e);
	case COLL_REDUCE_SCATTER:
		return sock_reduce_scatter(sc, k->send, k->recv, k->count, k->type, e);
	case COLL_BROADCAST:
		return sock_broadcast(sc, k->send, k->recv, k->count, k->type, k->root, e);
	case COLL_ALLTOALL: return sock_alltoall(sc, k->send, k->recv, k->count, k->type, e);
	case COLL_COUNT: break;
	}
	return err_set(e, 1, "bench: unknown collective");
}

static int sock_be_sync(struct backend *b, struct err *e)
{
	(void)b;
	(void)e;
	return 0;
}

const struct backend_ops backend_socket = {
	.name = "socket",
	.usable = NULL, /* every rank has a network */
	.supports = sock_be_supports,
	.banner = NULL,
	.describe = sock_be_describe,
	.open = sock_be_open,
	.close = sock_be_close,
	.alloc = sock_be_alloc,
	.free = sock_be_free,
	.mem_budget = sock_be_mem_budget,
	.clear = sock_be_clear,
	.upload = sock_be_upload,
	.download = sock_be_download,
	.run = sock_be_run,
	.sync = sock_be_sync,
};
