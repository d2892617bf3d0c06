/* coll_nccl.c - NCCL through dlopen (see coll_nccl.h).
 *
 * The prototypes are declared here rather than taken from nccl.h so the
 * build needs no CUDA headers; they are NCCL's stable C ABI (2.7 and
 * later): enums are ints with the values of nccl.h, ncclUniqueId is 128
 * bytes passed by value, and our enum dtype uses ncclDataType_t's values. */
#include "coll_nccl.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7, NCCL_SUM = 0 };

typedef struct {
	char internal[128];
} nccl_id;

static struct {
	void *lib;
	int (*GetVersion)(int *version);
	int (*GetUniqueId)(nccl_id *id);
	int (*CommInitRank)(void **comm, int nranks, nccl_id id, int rank);
	int (*CommDestroy)(void *comm);
	int (*CommAbort)(void *comm);
	int (*CommGetAsyncError)(void *comm, int *result);
	const char *(*GetErrorString)(int result);
	const char *(*GetLastError)(void *comm); /* NCCL 2.13+, may be NULL */
	int (*AllReduce)(const void *s, void *r, size_t n, int t, int op, void *comm, void *stream);
	int (*AllGather)(const void *s, void *r, size_t n, int t, void *comm, void *stream);
	int (*ReduceScatter)(const void *s, void *r, size_t n, int t, int op, void *comm,
			     void *stream);
	int (*Broadcast)(const void *s, void *r, size_t n, int t, int root, void *comm,
			 void *stream);
	int (*Send)(const void *s, size_t n, int t, int peer, void *comm, void *stream);
	int (*Recv)(void *r, size_t n, int t, int peer, void *comm, void *stream);
	int (*GroupStart)(void);
	int (*GroupEnd)(void);
} nc;
static int nc_state; /* 0 not tried, 1 usable, -1 not */
static char nc_why[200];
static char nc_version[32];
static const struct cudart *cuda;

struct nccl_comm {
	void *comm;
	void *stream;
	int device;
	long rank, nranks;
};

#define SYM(field, name) (*(void **)(&nc.field) = dlsym(nc.lib, name))

int nccl_usable(char *why, size_t size)
{
	if (nc_state == 0) {
		char cwhy[160] = "";
		int count = 0, ret, v = 0;

		nc_state = -1;
		cuda = cudart_load(cwhy, sizeof(cwhy));
		if (cuda == NULL) {
			snprintf(nc_why, sizeof(nc_why), "%s", cwhy);
		} else if ((ret = cuda->GetDeviceCount(&count)) != CUDA_OK || count <= 0) {
			snprintf(nc_why, sizeof(nc_why), "libcudart: %s",
				 ret != CUDA_OK ? cuda->GetErrorString(ret) : "no device");
		} else if ((nc.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) == NULL &&
			   (nc.lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL)) == NULL) {
			snprintf(nc_why, sizeof(nc_why), "libnccl.so.2 not found");
		} else if (!SYM(GetVersion, "ncclGetVersion") || !SYM(GetUniqueId, "ncclGetUniqueId") ||
			   !SYM(CommInitRank, "ncclCommInitRank") ||
			   !SYM(CommDestroy, "ncclCommDestroy") || !SYM(CommAbort, "ncclCommAbort") ||
			   !SYM(CommGetAsyncError, "ncclCommGetAsyncError") ||
			   !SYM(GetErrorString, "ncclGetErrorString") ||
			   !SYM(AllReduce, "ncclAllReduce") || !SYM(AllGather, "ncclAllGather") ||
			   !SYM(ReduceScatter, "ncclReduceScatter") ||
			   !SYM(Broadcast, "ncclBroadcast") || !SYM(Send, "ncclSend") ||
			   !SYM(Recv, "ncclRecv") || !SYM(GroupStart, "ncclGroupStart") ||
			   !SYM(GroupEnd, "ncclGroupEnd")) {
			snprintf(nc_why, sizeof(nc_why), "libnccl is older than 2.7 (no ncclSend)");
		} else {
			SYM(GetLastError, "ncclGetLastError");
			if (nc.GetVersion(&v) == NCCL_SUCCESS)
				/* 2.9+ codes are MAJOR*10000 + MINOR*100 + PATCH. */
				snprintf(nc_version, sizeof(nc_version), "%d.%d.%d",
					 v >= 10000 ? v / 10000 : v / 1000,
					 v >= 10000 ? v % 10000 / 100 : v % 1000 / 100, v % 100);
			nc_state = 1;
		}
	}
	if (nc_state == 1)
		return 0;
	if (why != NULL && size > 0)
		snprintf(why, size, "%s", nc_why);
	return -1;
}

const char *nccl_version(void)
{
	return nc_version;
}

static int nccl_fail(struct nccl_comm *c, struct err *e, const char *what, int ret)
{
	const char *last = c != NULL && c->comm != NULL && nc.GetLastError != NULL
		? nc.GetLastError(c->comm) : NULL;

	return err_set(e, 1, "nccl: %s: %s%s%s", what, nc.GetErrorString(ret),
		       last != NULL && *last != '\0' ? ": " : "", last != NULL ? last : "");
}

static int cuda_fail(struct err *e, const char *what, int ret)
{
	return err_set(e, 1, "cuda: %s: %s", what, cuda->GetErrorString(ret));
}

int nccl_comm_open(struct nccl_comm **out, struct rdzv *r, int device, struct err *e)
{
	struct nccl_comm *c;
	nccl_id id;
	int ret;

	*out = NULL;
	if (nccl_usable(NULL, 0) < 0)
		return err_set(e, 1, "nccl: %s", nc_why);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return err_set(e, 1, "nccl: out of memory");
	c->device = device;
	c->rank = r->rank;
	c->nranks = r->world;
	if ((ret = cuda->SetDevice(device)) != CUDA_OK) {
		cuda_fail(e, "cudaSetDevice", ret);
		goto fail;
	}
	if ((ret = cuda->StreamCreateWithFlags(&c->stream, CUDA_STREAM_NONBLOCKING)) != CUDA_OK) {
		cuda_fail(e, "cudaStreamCreate", ret);
		goto fail;
	}
	/* Rank 0 makes the id (it carries rank 0's bootstrap address, on the
	 * interface NCCL_SOCKET_IFNAME names); the rendezvous hands it out. */
	memset(&id, 0, sizeof(id));
	if (r->rank == 0 && (ret = nc.GetUniqueId(&id)) != NCCL_SUCCESS) {
		nccl_fail(NULL, e, "ncclGetUniqueId", ret);
		goto fail;
	}
	if (rdzv_bcast(r, &id, sizeof(id), e) < 0)
		goto fail;
	ret = nc.CommInitRank(&c->comm, (int)r->world, id, (int)r->rank);
	if (ret != NCCL_SUCCESS) {
		nccl_fail(NULL, e, "ncclCommInitRank", ret);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	nccl_comm_close(c);
	return -1;
}

void nccl_comm_close(struct nccl_comm *c)
{
	if (c == NULL)
		return;
	if (c->comm != NULL)
		nc.CommDestroy(c->comm);
	if (c->stream != NULL)
		cuda->StreamDestroy(c->stream);
	free(c);
}

int nccl_alloc(struct nccl_comm *c, size_t bytes, void **p, struct err *e)
{
	int ret = cuda->Malloc(p, bytes > 0 ? bytes : 1);

	(void)c;
	return ret == CUDA_OK ? 0 : cuda_fail(e, "cudaMalloc", ret);
}

void nccl_free(struct nccl_comm *c, void *p)
{
	(void)c;
	if (p != NULL)
		cuda->Free(p);
}

size_t nccl_mem_budget(struct nccl_comm *c)
{
	size_t free_b = 0, total = 0, spare = (size_t)1 << 30;

	(void)c;
	if (cuda->MemGetInfo(&free_b, &total) != CUDA_OK || free_b <= spare)
		return 0;
	return free_b - spare;
}

int nccl_clear(struct nccl_comm *c, void *dev, size_t bytes, struct err *e)
{
	int ret;

	(void)c;
	if (bytes == 0)
		return 0;
	ret = cuda->Memset(dev, 0, bytes);
	/* The legacy stream does not order against our non-blocking one:
	 * finish here before NCCL reads the buffer (nccl-tests does the same). */
	if (ret == CUDA_OK)
		ret = cuda->DeviceSynchronize();
	return ret == CUDA_OK ? 0 : cuda_fail(e, "cudaMemset", ret);
}

int nccl_upload(struct nccl_comm *c, void *dev, const void *host, size_t bytes, struct err *e)
{
	int ret;

	(void)c;
	if (bytes == 0)
		return 0;
	/* From pageable memory cudaMemcpy may return before the DMA is done. */
	ret = cuda->Memcpy(dev, host, bytes, CUDA_MEMCPY_H2D);
	if (ret == CUDA_OK)
		ret = cuda->DeviceSynchronize();
	return ret == CUDA_OK ? 0 : cuda_fail(e, "cudaMemcpy to the GPU", ret);
}

int nccl_download(struct nccl_comm *c, void *host, const void *dev, size_t bytes,
		  struct err *e)
{
	int ret;

	(void)c;
	if (bytes == 0)
		return 0;
	ret = cuda->Memcpy(host, dev, bytes, CUDA_MEMCPY_D2H);
	return ret == CUDA_OK ? 0 : cuda_fail(e, "cudaMemcpy from the GPU", ret);
}

int nccl_run(struct nccl_comm *c, enum coll coll, const void *send, void *recv, size_t count,
	     enum dtype t, long root, struct err *e)
{
	size_t bytes = count * dtype_size(t);
	int ret = NCCL_SUCCESS, end;

	switch (coll) {
	case COLL_ALL_REDUCE:
		ret = nc.AllReduce(send, recv, count, (int)t, NCCL_SUM, c->comm, c->stream);
		break;
	case COLL_ALL_GATHER:
		ret = nc.AllGather(send, recv, count, (int)t, c->comm, c->stream);
		break;
	case COLL_REDUCE_SCATTER:
		ret = nc.ReduceScatter(send, recv, count, (int)t, NCCL_SUM, c->comm, c->stream);
		break;
	case COLL_BROADCAST:
		ret = nc.Broadcast(send, recv, count, (int)t, (int)root, c->comm, c->stream);
		break;
	case COLL_ALLTOALL:
		/* As nccl-tests does it: one grouped send and receive per peer. */
		if (count == 0)
			return 0;
		nc.GroupStart();
		for (long p = 0; p < c->nranks && ret == NCCL_SUCCESS; p++) {
			ret = nc.Send((const char *)send + (size_t)p * bytes, count, (int)t, (int)p,
				      c->comm, c->stream);
			if (ret == NCCL_SUCCESS)
				ret = nc.Recv((char *)recv + (size_t)p * bytes, count, (int)t, (int)p,
					      c->comm, c->stream);
		}
		end = nc.GroupEnd();
		if (ret == NCCL_SUCCESS)
			ret = end;
		break;
	case COLL_COUNT:
		return err_set(e, 1, "nccl: unknown collective");
	}
	return ret == NCCL_SUCCESS ? 0 : nccl_fail(c, e, coll_name(coll), ret);
}

int nccl_sync(struct nccl_comm *c, struct err *e)
{
	for (;;) {
		int ret = cuda->StreamQuery(c->stream), async = NCCL_SUCCESS;

		if (ret == CUDA_OK)
			return 0;
		if (ret != CUDA_ERR_NOT_READY)
			return cuda_fail(e, "waiting for the collective", ret);
		/* A peer that died leaves the stream waiting forever: NCCL
		 * reports it here (nccl-tests polls the same way). */
		if (nc.CommGetAsyncError(c->comm, &async) == NCCL_SUCCESS &&
		    async != NCCL_SUCCESS && async != NCCL_IN_PROGRESS) {
			nc.CommAbort(c->comm);
			c->comm = NULL;
			return nccl_fail(NULL, e, "communicator failed", async);
		}
		sched_yield();
	}
}
