/* launch.h - this node's part of a run: workers, supervision, restarts. */
#ifndef CTRUN_LAUNCH_H
#define CTRUN_LAUNCH_H

#include <sched.h>
#include <stdbool.h>

#include "err.h"
#include "options.h"
#include "topology.h"

/* topo_detect for this process: its environment, short host name and
 * /dev/nvidiaN count. */
int launch_topology(const struct options *o, struct topo *t, struct err *e);

/* Makes t->master_addr numeric and reachable, picks the standalone port. */
int launch_prepare(struct topo *t, struct err *e);

/* The final worker argv: a .py COMMAND runs under the interpreter. */
int launch_command(const struct options *o, struct strv *argv, struct err *e);

/* Starts t->nproc workers running o->command and supervises them.
 * Returns the exit status for ctrun (>= 0) or -1 with e. */
int launch_local(const struct options *o, struct topo *t, char *const *envp, struct err *e);

/* Worker i of n's share of the CPUs in `all`: contiguous and even; false
 * (inherit all) when there are fewer CPUs than workers. */
bool launch_cpu_share(const cpu_set_t *all, long i, long n, cpu_set_t *out);

/* Fail-fast across nodes: cancels this Slurm step with SIGURG (see launch.c). */
void launch_cancel_step(const struct topo *t);

/* `ctrun env`: prints each local worker's variables, one block each. */
int launch_print_env(const struct options *o, const struct topo *t, char *const *envp,
		     struct err *e);

#endif
