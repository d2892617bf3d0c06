/* tasks.h - Slurm's compressed per-node counts: SLURM_TASKS_PER_NODE,
 * SLURM_STEP_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE ("2(x3),1" is
 * 2,2,2,1 for four nodes in nodelist order). */
#ifndef CTRUN_TASKS_H
#define CTRUN_TASKS_H

#include <stddef.h>

#include "err.h"

/* Largest count on one node, and most nodes in one list (the hostlist cap,
 * so a list always fits a nodelist). */
#define TASKS_MAX_PER_NODE (1L << 20)
#define TASKS_MAX_NODES    (1L << 20)

/* Parses s = COUNT[(xREPEAT)][,COUNT[(xREPEAT)]]... with COUNT in
 * [0, TASKS_MAX_PER_NODE] and REPEAT in [1, TASKS_MAX_NODES], decimal
 * digits only, no blanks.  On success *counts (free() it) holds *n >= 1
 * values.  Returns 0, or -1 with err_set(e, EXIT_CTRUN, ...) naming the
 * input and the byte offset; *counts is then NULL and *n 0. */
int tasks_per_node_parse(const char *s, long **counts, size_t *n, struct err *e);

#endif
