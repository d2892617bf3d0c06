/* launch.h - this node's part of a run: workers, supervision, restarts.
 *
 * Folder runner/launch/: this node's part of a run: the worker environment
 * contract, CPU binding, the restart loop, launch_run_here, the hang watch's
 * node side.  May use: runner/batch/ (the watch's node side), runner/slurm/,
 * runner/config/, runner/node/, runner/supervise/, core/ (the GNUmakefile's
 * include paths enforce it).
 */
#ifndef CTRUN_LAUNCH_H
#define CTRUN_LAUNCH_H

#include <sched.h>
#include <stdbool.h>

#include "err.h"
#include "options.h"
#include "strv.h"
#include "supervise.h"
#include "topology.h"

/* The exit status of workers ctrun stopped as hung (--hang-timeout), as
 * timeout(1)'s. */
#define LAUNCH_HUNG 124

/* topo_detect for this process: its environment, short host name and
 * /dev/nvidiaN count. */
int launch_topology(const struct options *o, struct topo *t, struct err *e);

/* Makes t->master_addr numeric and reachable, picks the standalone port. */
int launch_prepare(struct topo *t, struct err *e);

/* The final worker argv: a .py COMMAND runs under the interpreter. */
int launch_command(const struct options *o, struct strv *argv, struct err *e);

/* One run of this node's t->nproc workers running argv (restart: how
 * many runs came before): fills r; -1 with e when ctrun itself failed
 * before any worker started. */
typedef int (*launch_run_fn)(const struct options *o, struct topo *t, char *const *envp,
			     const struct strv *argv, long restart, struct supervise_result *r,
			     struct err *e);

/* launch_run_fn that forks the workers here and supervises them. */
int launch_run_here(const struct options *o, struct topo *t, char *const *envp,
		    const struct strv *argv, long restart, struct supervise_result *r,
		    struct err *e);

/* Resolves o->command, prepares the rendezvous and calls `run` until the
 * workers succeed or --max-restarts is spent (runner/cmd_run.c passes
 * launch_run_here, or container_run with --image).  Returns the exit
 * status for ctrun (>= 0) or -1 with e. */
int launch_local(const struct options *o, struct topo *t, char *const *envp, launch_run_fn run,
		 struct err *e);

/* Worker i of n's share of the CPUs in `all`: contiguous and even; false
 * (inherit all) when there are fewer CPUs than workers. */
bool launch_cpu_share(const cpu_set_t *all, long i, long n, cpu_set_t *out);

/* --log-dir's directory of this node: DIR/JOBID/HOST (dir: the option's
 * value, absolute or relative to the working directory) into out.  With
 * make, every step of it is made where missing and checked from "/" on
 * descriptors (core/trustdir.h: no other user can redirect it); -1 with e
 * (125) naming the step that another user could change. */
int launch_log_dir(const char *dir, const struct topo *t, bool make, char *out, size_t size,
		   struct err *e);

/* `ctrun env`: prints each local worker's variables, one block each. */
int launch_print_env(const struct options *o, const struct topo *t, char *const *envp,
		     struct err *e);

#endif
