/* check.h - what `ctrun check` and `ctrun bench` share: running ctrun
 * itself (with --image: build/ctrun-worker inside the container) as the
 * workers of a job, a worker's view of its environment,
 * the per-rank row, and the preflight diagnoses (pure, unit tested). */
#ifndef CTRUN_CHECK_H
#define CTRUN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "options.h"
#include "strv.h"

/* Launches `ctrun __worker WORD ARGS...` like a training job (any launch
 * mode; from a batch script through srun first), with the worker's output
 * unprefixed: rank 0 prints the report.  Returns ctrun's exit status. */
int check_launch_workers(struct options *o, const char *word, const struct strv *args,
			 struct err *e);

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
};
int worker_ctx_read(char *const *envp, struct worker_ctx *w, struct err *e);

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
};
void rank_row_collect(const struct worker_ctx *w, char *const *envp, struct rank_row *row);

/* What rank 0 reports besides the rows. */
struct check_summary {
	char master[300];       /* "ADDR:PORT" */
	long world;
	char backend[16];       /* "nccl" or "socket" */
	char backend_note[200]; /* why not nccl ("no CUDA device (...)"), "" if nccl */
	size_t elements;        /* floats all-reduced */
	bool allreduce_run;
	double usec;            /* slowest rank's all-reduce time */
	long long wrong;        /* wrong elements over all ranks */
	struct strv diagnoses;  /* each one line; any makes the check fail */
	struct strv warnings;
	bool ok;
};
/* The table (rows in rank order, then the summary lines) or one JSON document. */
void check_report_table(FILE *f, const struct rank_row *rows, size_t n,
			const struct check_summary *s);
int check_report_json(FILE *f, const struct rank_row *rows, size_t n,
		      const struct check_summary *s);

/* Why this rank cannot use NCCL, as the line users see: "no CUDA device:
 * using socket backend (libcudart: ...)"; "" when it can. */
void backend_fallback_note(const struct rank_row *row, const char *nccl_why, char *out,
			   size_t size);

/* NCCL_SOCKET_IFNAME syntax: comma-separated prefixes, "^" excludes,
 * "=" asks for exact names. */
bool ifname_spec_matches(const char *spec, const char *ifname);
/* A diagnosis in `msg` (returns false) when `var`=`spec` selects none of
 * the interfaces in `ifaces` (those with an address). */
bool check_ifname(const char *var, const char *spec, const struct strv *ifaces, char *msg,
		  size_t size);
/* A diagnosis when two ranks on one host drive the same GPU: same bus id,
 * or (without the runtime) the same GPU index within one Slurm task. */
bool check_unique_gpus(const struct rank_row *rows, size_t n, char *msg, size_t size);

#endif
