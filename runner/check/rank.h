/* rank.h - what every worker of `ctrun check` and `ctrun bench` knows
 * about itself: the contract ctrun gave it (RANK, MASTER_ADDR, ...) and the
 * row it reports to rank 0 (host, GPU, CPUs, NUMA). */
#ifndef CTRUN_RANK_H
#define CTRUN_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "jobkey.h"

/* The exit status of a rank whose failure rank 0 reports: 0, so that
 * fail-fast does not stop rank 0 before it has printed why (the job's
 * status is rank 0's). */
#define EXIT_REPORTED_BY_RANK0 0

/* What a worker knows from the contract ctrun gave it. */
struct worker_ctx {
	long rank, local_rank, world, local_world, node_rank, nnodes, master_port;
	char master_addr[256];
	char host[64];
	char job[64]; /* job and step: another job on the same port is told apart */
	uint8_t key[JOBKEY_LEN]; /* the rendezvous key ctrun derived (CTRUN_RDZV_KEY) */
};
int worker_ctx_read(char *const *envp, struct worker_ctx *w, struct err *e);

/* An RDMA port of the rank's node (runner/node/fabric.h), and whether the
 * rank has its device's verbs node (a container: whether it received it). */
#define RANK_PORTS 8
struct rank_port {
	char dev[24];
	char state[12];
	char link[12];
	char rate[32];
	uint8_t port, active, received, pad;
};

/* One rank as the report shows it; fixed size, sent over the rendezvous. */
struct rank_row {
	int32_t rank, local_rank, node_rank, pid;
	int32_t gpu_numa, cuda, ordinal, ndevices;
	char host[64];
	char group[32];      /* the Slurm task that started it: GPUs compare within one */
	char gpu[32];        /* GPU index as the scheduler names it, "-" none */
	char bus_id[32];
	char uuid[48];
	char gpu_name[96];
	char cpus[128];      /* CPU affinity list */
	char numa[32];       /* NUMA nodes of those CPUs */
	char gpu_cpus[128];  /* CPUs local to the GPU */
	char why[160];       /* why there is no CUDA device */
	struct rank_port ports[RANK_PORTS]; /* the node's RDMA ports */
	int32_t nports;
	char netlibs[128];   /* the network libraries ctrun bound (CTRUN_FABRIC_BOUND), "" none */
};
void rank_row_collect(const struct worker_ctx *w, char *const *envp, struct rank_row *row);
/* Terminates every string of a row another rank sent: what the network
 * brings is bounded here, whatever the peer put in it. */
void rank_row_seal(struct rank_row *row);

/* Why this rank cannot use NCCL, as the line users see: "no CUDA device:
 * using socket backend (libcudart: ...)"; "" when it can. */
void backend_fallback_note(const struct rank_row *row, const char *nccl_why, char *out,
			   size_t size);

#endif
