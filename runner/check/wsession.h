/* wsession.h - how every worker of `ctrun check` and `ctrun bench`
 * starts: read the contract ctrun gave it (rank.h), collect its row, meet
 * the other ranks (rendezvous.h), gather the rows at rank 0 and vote on
 * the backend (backend.h) that every rank can use.  check and bench differ
 * only in what they do with the session afterwards.
 *
 * (Named wsession, "worker session": registry/session.h is the registry's.) */
#ifndef CTRUN_WSESSION_H
#define CTRUN_WSESSION_H

#include <stdbool.h>

#include "backend.h"
#include "err.h"
#include "rank.h"
#include "rendezvous.h"

struct wsession_opts {
	long timeout;        /* how long ranks wait for each other, seconds */
	/* The backend the vote starts at, by name ("socket" skips NCCL);
	 * NULL: the table's first.  Later entries are the fallbacks. */
	const char *backend;
	/* The table voted on; NULL: backend_table (unit tests give theirs). */
	const struct backend_ops *const *table;
	/* Runs once the contract is read, before this rank meets anyone
	 * (check's local preflight: a rank that fails it never joins). */
	int (*preflight)(const struct worker_ctx *w, void *arg, struct err *e);
	void *arg;
};

/* Read-only for the caller once open. */
struct wsession {
	struct worker_ctx w;
	struct rank_row row;               /* this rank's */
	struct rank_row *rows;             /* rank 0: every rank's in rank order, sealed; else NULL */
	struct rdzv r;
	const struct backend_ops *backend; /* the vote's outcome: every rank can use it */
	const struct backend_ops *wanted;  /* where the vote started */
	char why[200];                     /* why this rank cannot use `wanted`, or "" */
};

/* Opens the session; every rank reaches the same backend.  On failure: -1
 * with e set (not wrapped: the caller names its command) and s still
 * needs wsession_close. */
int wsession_open(struct wsession *s, char *const *envp, const struct wsession_opts *o,
		  struct err *e);
void wsession_close(struct wsession *s);

/* Did open fail because another rank failed?  Then rank 0 reports it and
 * this rank exits EXIT_REPORTED_BY_RANK0. */
bool wsession_reported(const struct wsession *s);
/* Did the vote settle below the backend it started at? */
bool wsession_fell_back(const struct wsession *s);

#endif
