/* hangwatch.h - a node's side of --hang-timeout: its workers' heartbeat
 * files and silences (supervise's heartbeat.h), handed to the batch ctrun's
 * watch (watchclient.h), which judges the whole job; or, where this ctrun
 * runs every worker of the job (a run outside Slurm, one node's step of
 * its own), judged here.  In task and node mode under the user's own srun
 * no ctrun sees the whole job: nothing is tracked (launch.c says so). */
#ifndef CTRUN_HANGWATCH_H
#define CTRUN_HANGWATCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "options.h"
#include "strv.h"
#include "supervise.h"
#include "topology.h"

struct hangwatch {
	bool on;             /* progress is tracked */
	bool local;          /* judged here, not by the batch ctrun */
	long long hang_ms;
	long long first_ms;  /* the bound before a worker's first progress */
	char dir[PATH_MAX];  /* the heartbeat files' directory here, "" for none */
	const char *host;
	bool quiet;
};

/* Whether this run tracks its workers' progress, and how (no files yet). */
void hangwatch_init(struct hangwatch *h, const struct options *o, const struct topo *t);
/* The heartbeat directory under $TMPDIR (else /tmp); where it cannot be
 * made, one line says so and output alone counts as progress. */
int hangwatch_dir(struct hangwatch *h, char *const *envp, struct err *e);
/* Worker rank's PROGRESS_ENV into env (nothing without a directory). */
int hangwatch_env(const struct hangwatch *h, long rank, struct strv *env);
/* The silences of one tick: to the batch ctrun, or judged here (true: the
 * workers hung, said in one line). */
bool hangwatch_tick(struct hangwatch *h, const long *ranks, const long long *silent_ms,
		    const bool *started, size_t n);
/* supervise_opts.on_progress over hangwatch_tick (arg: the hangwatch). */
bool hangwatch_cb(void *arg, const struct worker *w, const long long *silent_ms,
		  const bool *started, size_t n);
/* Removes the heartbeat directory. */
void hangwatch_end(struct hangwatch *h);

#endif
