/* check.h - the worker side of `ctrun check`: the report (table or JSON)
 * and the preflight diagnoses (pure, unit tested).
 *
 * Folder runner/check/: the workers of `ctrun check` and `ctrun bench`:
 * their view of the contract (rank.h), the start they share (wsession.h),
 * the backends they run over (backend.h), the preflight, the sweep, the tables;
 * linked into ctrun and ctrun-worker.  May use: runner/net/, runner/node/,
 * core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_CHECK_H
#define CTRUN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "ncclnet.h"
#include "rank.h"
#include "strv.h"

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
	struct ncclnet *nets;   /* rank 0: each rank's NCCL network (rank order), or NULL */
	struct strv diagnoses;  /* each one line; any makes the check fail */
	struct strv warnings;
	bool ok;
};
/* The table (rows in rank order, then the summary lines) or one JSON document. */
void check_report_table(FILE *f, const struct rank_row *rows, size_t n,
			const struct check_summary *s);
int check_report_json(FILE *f, const struct rank_row *rows, size_t n,
		      const struct check_summary *s);

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

/* `ctrun __worker check ARGS...`: one rank of the check. */
int check_worker(char *const *words, size_t nwords, struct err *e);

/* `ctrun __worker check|bench ARGS...` (ctrun and ctrun-worker): dispatches. */
int check_worker_main(char *const *words, size_t nwords, struct err *e);

#endif
