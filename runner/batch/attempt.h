/* attempt.h - one attempt of a batch-mode run: the srun step on the
 * attempt's nodes, the batch ctrun's signals passed on to it, and, with a
 * watch (watch.h), the step stopped as soon as a node is lost or the job
 * hangs, without waiting for srun (which waits for a dead node as long as
 * Slurm takes to notice it). */
#ifndef CTRUN_ATTEMPT_H
#define CTRUN_ATTEMPT_H

#include <stdbool.h>

#include "err.h"
#include "strv.h"
#include "topology.h"
#include "watch.h"

/* A step's status when the batch ctrun stopped it itself: as timeout(1)
 * for a hang; as a SIGKILLed task for a lost node (its workers died with it). */
#define ATTEMPT_HUNG 124
#define ATTEMPT_LOST 137

struct attempt {
	const struct topo *t;
	char **argv;          /* srun ... */
	char **envp;
	struct watch *watch;  /* NULL: srun alone decides */
	long grace_ms;        /* how long a stopped node may take to end (--kill-timeout + margin) */
	bool quiet;
};

struct attempt_result {
	int status;        /* srun's, or ATTEMPT_HUNG / ATTEMPT_LOST */
	bool signalled;    /* srun died of a signal */
	int stopped;       /* the first stop signal the batch ctrun received, 0 if none */
	bool hung;
	bool silent_end;   /* a node's ctrun ended without its last word (lost or not) */
	struct strv lost;  /* the nodes lost during the attempt */
	struct strv why;   /* why, for each */
};

/* Runs the attempt until srun ends, or until the nodes it still has ended
 * after the batch ctrun stopped the step (a lost node, a hang).  -1 with e
 * for ctrun's own failure (fork, poll). */
int attempt_run(const struct attempt *a, struct attempt_result *r, struct err *e);
void attempt_result_free(struct attempt_result *r);

#endif
