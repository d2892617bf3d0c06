/* backend_nccl.c - the NCCL backend of check and bench: the operations of
 * backend.h over runner/net/coll_nccl.c (libcudart and libnccl loaded at
 * run time).  Buffers are device memory. */
#include "backend.h"

#include <stdio.h>

#include "coll_nccl.h"

static bool nccl_be_usable(const struct rank_row *row, char *why, size_t size)
{
	/* nccl_usable is not asked without a device: the row says why then. */
	return row->cuda && nccl_usable(why, size) == 0;
}

static bool nccl_be_supports(enum coll c, enum dtype t, char *why, size_t size)
{
	(void)c;
	(void)t;
	(void)why;
	(void)size;
	return true;
}

static const char *nccl_be_banner(void)
{
	static char line[64];

	snprintf(line, sizeof(line), "NCCL version %s", nccl_version());
	return line;
}

static void nccl_be_describe(const struct rank_row *r, struct bench_device *d)
{
	d->device = r->ordinal;
	/* nccl-tests prints domain:bus:device. */
	snprintf(d->bus, sizeof(d->bus), "%.10s", r->bus_id[0] != '\0' ? r->bus_id : "-");
	snprintf(d->name, sizeof(d->name), "%s", r->gpu_name);
}

static int nccl_be_open(struct backend *b, struct rdzv *r, const struct rank_row *row,
			struct err *e)
{
	struct nccl_comm *c = NULL;

	if (nccl_comm_open(&c, r, row->ordinal, e) < 0)
		return -1;
	b->impl = c;
	return 0;
}

static void nccl_be_close(struct backend *b)
{
	nccl_comm_close(b->impl);
}

static int nccl_be_alloc(struct backend *b, size_t bytes, void **p, struct err *e)
{
	return nccl_alloc(b->impl, bytes, p, e);
}

static void nccl_be_free(struct backend *b, void *p)
{
	nccl_free(b->impl, p);
}

static size_t nccl_be_mem_budget(struct backend *b)
{
	return nccl_mem_budget(b->impl);
}

static int nccl_be_clear(struct backend *b, void *buf, size_t bytes, struct err *e)
{
	return nccl_clear(b->impl, buf, bytes, e);
}

static int nccl_be_upload(struct backend *b, void *buf, const void *host, size_t bytes,
			  struct err *e)
{
	return nccl_upload(b->impl, buf, host, bytes, e);
}

static int nccl_be_download(struct backend *b, void *host, const void *buf, size_t bytes,
			    struct err *e)
{
	return nccl_download(b->impl, host, buf, bytes, e);
}

static int nccl_be_run(struct backend *b, const struct coll_call *k, struct err *e)
{
	return nccl_run(b->impl, k->coll, k->send, k->recv, k->count, k->type, k->root, e);
}

static int nccl_be_sync(struct backend *b, struct err *e)
{
	return nccl_sync(b->impl, e);
}

const struct backend_ops backend_nccl = {
	.name = "nccl",
	.usable = nccl_be_usable,
	.supports = nccl_be_supports,
	.banner = nccl_be_banner,
	.describe = nccl_be_describe,
	.open = nccl_be_open,
	.close = nccl_be_close,
	.alloc = nccl_be_alloc,
	.free = nccl_be_free,
	.mem_budget = nccl_be_mem_budget,
	.clear = nccl_be_clear,
	.upload = nccl_be_upload,
	.download = nccl_be_download,
	.run = nccl_be_run,
	.sync = nccl_be_sync,
};
