/* agentspec.h - what ctrun tells the in-container agent: this node's workers
 * (argv, environment, CPUs, ranks) and how to supervise them.
 *
 * ctrun writes the spec into the run directory, which the runtime mounts
 * read-only at /.ctrun; the agent (a static binary, no JSON) reads it.
 * The format is a sequence of records, each
 *
 *     TAG LENGTH ':' BYTES '\n'
 *
 * TAG one letter, LENGTH decimal, BYTES exactly LENGTH arbitrary bytes (so
 * values may hold newlines, quotes, anything but NUL).  It starts with V
 * (version "1") and ends with Z, so a truncated file is refused.
 *   global: H host, P prefix 0|1, L log dir, G grace ms, Q quiet 0|1,
 *           C working directory, E events FIFO, K control FIFO,
 *           I inherited variable K=V (repeatable),
 *           T the host's K=V that --env KEY asks for, over the container's own
 *             and under the runtime's (repeatable),
 *           D a host variable K=V the runtime passed into the container (enroot,
 *             ch-run): --clean-env removes it from the container's own
 *             environment where it is still there unchanged (repeatable),
 *           O the runtime's variable K=V, over the container's own (repeatable),
 *           J a library directory appended to LD_LIBRARY_PATH when it exists
 *             in the container (repeatable),
 *           N 0|1 the container's environment is apptainer's (--cleanenv):
 *             complete it as apptainer does not (agent_complete_env),
 *           M 0|1 source the image's /.singularity.d/env/ *.sh with its
 *             /bin/sh, as apptainer does (imageenv.h): the runtime did not,
 *           Y an entrypoint candidate (repeatable): the first that is an
 *             executable file in the container runs each worker's argv
 *           F 0|1 the candidates are the image's default command (`ctrun
 *             --image IMG` with no command): the first found runs with no
 *             arguments, and each worker's argv (a shell) only when there is
 *             none: not an error, unlike Y alone
 *           X "UID GID": before anything else the supervisor enters a user
 *             namespace of its own mapping UID and GID to its root
 *             (asuser.h), so the workers are the caller inside
 *           B 0|1 descriptor 3 is the step's PMI2 socket (PMI_FD; pmifd.h):
 *             the agent checks, before it opens anything, that the runtime
 *             passed it, and says so in one line where it did not
 *           h --hang-timeout: a directory in the container under which the
 *             agent makes the workers' heartbeat files (heartbeat.h) and
 *             reports every worker's silence each second (agentproto.h P)
 *   worker: W rank (starts a worker), R local rank, A argv word (repeatable),
 *           S variable K=V set for this worker (repeatable), U CPU list "0-3,8"
 * Both directions are pure functions, so unit tests and fuzzers call them.
 *
 * Folder runner/agent/: the in-container agent: the spec it reads and the
 * messages it exchanges with ctrun (agentproto.h) (a library for ctrun), and
 * ctrun-agent's main.c.  May use: runner/supervise/, core/
 * (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_AGENTSPEC_H
#define CTRUN_AGENTSPEC_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include "cpulist.h"
#include "err.h"
#include "strv.h"

/* Fixed places inside the container (the run directory is mounted at AGENT_DIR). */
#define AGENT_DIR "/.ctrun"
#define AGENT_BIN AGENT_DIR "/agent"
#define AGENT_SPEC AGENT_DIR "/spec"
#define AGENT_EVENTS AGENT_DIR "/events"   /* agent -> ctrun (agentproto.h) */
#define AGENT_CONTROL AGENT_DIR "/control" /* ctrun -> agent (agentproto.h) */

#define AGENTSPEC_MAX (64u << 20) /* bytes of spec the agent accepts */

/* PATH when --clean-env left none: docker's default (ENVCTL_DEFAULT_PATH). */
#define AGENT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct agent_worker {
	long rank;
	long local_rank;
	struct strv argv;  /* argv[0] as the user gave it: resolved inside the container */
	struct strv env;   /* set for this worker, over everything else */
	bool has_cpus;
	cpu_set_t cpus;
};

struct agent_spec {
	char *host;
	bool prefix;
	bool quiet;
	long grace_ms;
	char *log_dir;        /* NULL = none */
	char *cwd;            /* NULL = stay where the runtime started us */
	char *events;         /* NULL = none */
	char *control;        /* NULL = none */
	struct strv inherit;  /* ctrun's environment, under the container's own */
	struct strv host_over; /* --env KEY: the host's values, over the container's own */
	struct strv host_drop; /* --clean-env: the host's variables the runtime passed in */
	struct strv over;     /* the runtime's variables, over the container's own */
	struct strv libdirs;  /* appended to LD_LIBRARY_PATH (the agent drops those
			       * that do not exist in the container first) */
	struct strv entry;    /* entrypoint candidates, in order; empty = none */
	bool entry_default;   /* F: the first candidate alone, else the argv */
	bool complete_env;    /* complete apptainer's --cleanenv environment */
	bool image_scripts;   /* source the image's /.singularity.d/env scripts */
	bool as_user;         /* X: switch to uid, gid (asuser.h) */
	bool pmi_fd3;         /* B: descriptor 3 must be the step's PMI2 socket */
	char *heartbeat_base; /* h: where the heartbeat files go; NULL = no progress reports */
	long uid, gid;
	struct agent_worker *w;
	size_t n;
};

int agentspec_format(const struct agent_spec *s, char **buf, size_t *len, struct err *e);
int agentspec_parse(const char *buf, size_t len, struct agent_spec *s, struct err *e);
void agentspec_free(struct agent_spec *s);

/* Adds one worker (rank, local rank, argv copied) and returns it, NULL on ENOMEM. */
struct agent_worker *agentspec_add_worker(struct agent_spec *s, long rank, long local_rank,
					  char *const *argv);

/* --clean-env for a runtime that passes the host's environment into the
 * container: removes from `own` every entry equal to one of `host_drop`,
 * but the names that `image_env` (the image's /etc/environment) sets, then
 * puts AGENT_DEFAULT_PATH when no PATH is left.  Nothing without D records. */
int agentspec_drop_host(const struct agent_spec *s, struct strv *own, char *const *image_env);

/* Worker i's environment inside the container, lowest layer first:
 * `inherit` (ctrun's environment), then the container's own (the image's
 * variables and what the runtime set: PATH, LD_LIBRARY_PATH for --nv...),
 * then `host_over` (--env KEY), then `over` (what ctrun's runtime adapter sets, e.g. the renumbered
 * CUDA_VISIBLE_DEVICES of an isolated apptainer container), `libdirs`
 * appended to LD_LIBRARY_PATH, then the worker's variables (the torchrun
 * contract, --env).  As with
 * pyxis, the image wins over the host, and ctrun's contract over both. */
int agentspec_worker_env(const struct agent_spec *s, size_t i, char *const *container_env,
			 struct strv *out, struct err *e);

/* Whether a variable of ctrun's environment crosses into containers: not
 * the search paths that name host directories (PATH, LD_LIBRARY_PATH,
 * LD_PRELOAD) nor the runtimes' own settings (ENROOT_*, APPTAINER*,
 * SINGULARITY*), nor ctrun's own CTRUN_* but the workers' CTRUN_RDZV_KEY. */
bool agentspec_inheritable(const char *kv);


#endif
