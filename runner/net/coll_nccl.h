/* coll_nccl.h - the NCCL backend of check and bench: libnccl.so.2 and
 * libcudart loaded at run time, one communicator per rank with the
 * ncclUniqueId made by rank 0 and handed out over the rendezvous.
 * Everything fails soft: without a runtime, driver or device the caller
 * learns why and uses the socket backend. */
#ifndef CTRUN_COLL_NCCL_H
#define CTRUN_COLL_NCCL_H

#include <stddef.h>

#include "busbw.h"
#include "err.h"
#include "rendezvous.h"

struct nccl_comm;

/* Can this process use NCCL at all (library loads, a CUDA device is
 * there)?  0, or -1 with the reason in `why`. */
int nccl_usable(char *why, size_t size);
/* "2.28.9", or "" before nccl_usable succeeded. */
const char *nccl_version(void);

/* Communicator over the ranks of `r` on CUDA device `device`. */
int nccl_comm_open(struct nccl_comm **c, struct rdzv *r, int device, struct err *e);
void nccl_comm_close(struct nccl_comm *c);

int nccl_alloc(struct nccl_comm *c, size_t bytes, void **p, struct err *e);
void nccl_free(struct nccl_comm *c, void *p);
/* Largest buffer total that fits on the device, keeping 1 GiB spare. */
size_t nccl_mem_budget(struct nccl_comm *c);
int nccl_clear(struct nccl_comm *c, void *dev, size_t bytes, struct err *e);
int nccl_upload(struct nccl_comm *c, void *dev, const void *host, size_t bytes, struct err *e);
int nccl_download(struct nccl_comm *c, void *host, const void *dev, size_t bytes,
		  struct err *e);

/* Enqueues one collective on the communicator's stream (nccl-tests'
 * calls: alltoall is grouped ncclSend/ncclRecv); nccl_sync waits for it
 * and notices a failed peer through ncclCommGetAsyncError. */
int nccl_run(struct nccl_comm *c, enum coll coll, const void *send, void *recv, size_t count,
	     enum dtype t, long root, struct err *e);
int nccl_sync(struct nccl_comm *c, struct err *e);

#endif
