/* nodeplan.h - which of the job's nodes each attempt of a batch-mode run
 * trains on, and in which order: spare nodes (--spares S) that take a lost
 * node's place, and elastic node counts (--nnodes MIN:MAX) that let the
 * world shrink when no spare is left.
 *
 * Each attempt has node ranks 0..world-1 ("slots").  A node keeps its slot
 * from one attempt to the next while it is usable; a slot whose node was
 * left out goes to the first unused usable node in Slurm's order (a spare),
 * so the world size and every other node's rank stay the same.  With no
 * spare left, the slots that still have a node close ranks (their order
 * kept) if at least MIN remain.  A node left out stays out for the job.
 * Pure: names in, names out, for the unit tests.
 *
 * Folder runner/batch/: the batch-mode ctrun (batch.h): the srun step it
 * runs on the job's nodes and restarts, the node plan, the nodes' health
 * checks, the watch over a running step (lost nodes, hangs) and the nodes'
 * side of that watch.  May use: runner/slurm/, runner/config/,
 * runner/node/, images/, core/ (the GNUmakefile's include paths enforce
 * it). */
#ifndef CTRUN_NODEPLAN_H
#define CTRUN_NODEPLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

struct nodeplan {
	struct strv nodes; /* the job's nodes, in Slurm's order */
	char **why_out;    /* per node: NULL while usable, else why it was left out */
	long *slot;        /* per node: its node rank in the last attempt, -1 for none */
	long spares;       /* --spares */
	long min, max;     /* the node counts an attempt may have */
	long world;        /* the last attempt's node count, 0 before the first */
};

/* The plan for the job's nodes.  spares 0 and min = max = -1 (not given)
 * train on every node.  Refused with EXIT_USAGE, in one line saying how to
 * fix it: spares not below the node count, a MIN:MAX outside the
 * allocation, MAX with spares above what the spares leave. */
int nodeplan_init(struct nodeplan *p, char *const *nodes, long spares, long min, long max,
		  struct err *e);
void nodeplan_free(struct nodeplan *p);

/* Whether the plan can ever change an attempt's nodes: spares, or a MIN
 * below MAX, or nodes beyond MAX waiting as spares. */
bool nodeplan_resilient(const struct nodeplan *p);

/* Leaves node out of every later attempt, for why (the first reason is
 * kept).  0, or -1 when the job has no such node. */
int nodeplan_leave_out(struct nodeplan *p, const char *node, const char *why);

/* Whether the job's node i is still usable. */
bool nodeplan_usable(const struct nodeplan *p, size_t i);

/* The next attempt's nodes, node rank 0 first, into order (emptied
 * first).  -1 with why (a sentence without "ctrun:") when fewer than MIN
 * usable nodes are left. */
int nodeplan_next(struct nodeplan *p, struct strv *order, char *why, size_t size);

/* The node holding a slot (node rank) of the last attempt, NULL if none. */
const char *nodeplan_at(const struct nodeplan *p, long rank);

/* v's names joined by ',' (srun --nodelist); malloc'd, NULL without memory. */
char *nodeplan_list(char *const *v);

#endif
