/* container.h - this node's workers inside a container (--image): one
 * container per ctrun (per node in node mode, per task in task mode), the
 * agent inside it starting and supervising the workers.
 *
 * Folder runner/container/: a run in a container: set-up from the options
 * (image, cache or the mounted image and its holder, runtime, mounts, GPUs,
 * run directory), spawning the plan,
 * watching the agent.  May use: runner/container/rt/, runner/agent/,
 * runner/launch/, runner/batch/, runner/slurm/, runner/config/, runner/node/,
 * runner/supervise/, images/, core/ (the GNUmakefile's include paths enforce
 * it).
 */
#ifndef CTRUN_CONTAINER_H
#define CTRUN_CONTAINER_H

#include "cache/cache.h"
#include "cdireg.h"
#include "ctrroot.h"
#include "err.h"
#include "imgsource.h"
#include "cache/named.h"
#include "namedroot.h"
#include "options.h"
#include "runtime.h"
#include "strv.h"
#include "supervise.h"
#include "topology.h"

/* Everything about the container that does not depend on the workers:
 * image, runtime, root file system, mounts, GPUs, run directory. */
struct ctr_setup {
	struct ctr_spec spec;
	struct ctr_ask ask;     /* what the user asked (ask.c), read by every phase */
	struct cache_cfg cache; /* ask.cache's */
	char cache_dir[4096];
	char image[4096];
	char bin[4096];
	char rundir[4096];
	char cwd[4096];         /* ctrun's working directory (spec.cwd without --workdir) */
	char id[256];
	char agent[4096];       /* ctrun-agent on the host */
	char gpu_ids[1024];
	char log_dir[4096];     /* --log-dir's directory of this node, "" = none */
	char user[256];         /* spec.user: the caller's login name */
	char user_home[4096];   /* spec.user_home: the caller's home directory */
	char home[4096];        /* spec.home */
	int hold_fd;            /* cache entry in use (gc skips it), -1 = none */
	struct ctr_root root;   /* the root file system and its holder (ctrroot.h) */
	struct named named;     /* --name: the kept container, its lock held (lock_fd -1 = none) */
	struct named_root nroot; /* --name shared: this run's part in its one mounted root */
	char share[4096];       /* task mode: the node's shared holder (holder_share), "" = own */
	bool rundir_made;
	/* CDI (devices.c): the node's spec directories read once (cdi_state:
	 * 0 not yet, 1 read, -1 could not be: cdi_err says why), and the
	 * CDI names of the container's GPUs when [gpu] source chose CDI. */
	struct cdi_reg cdi;
	int cdi_state;
	struct err cdi_err;
	struct strv cdi_gpus;
};

/* ask.c: c->ask from the options, once (`agent`: a run of the agent). */
/* --unshare's value: a comma-separated list of net, ipc, uts (pyxis's
 * --container-unshare) into CTR_UNSHARE_* bits; NULL is 0.  -1 with e
 * (EXIT_USAGE) on an empty or unknown name. */
int ctr_unshare_parse(const char *list, unsigned *out, struct err *e);
void ctr_ask_init(struct ctr_setup *c, const struct options *o, const struct topo *t,
		  char *const *envp, bool agent);
/* Prepares the container from the options: `agent` for a run of workers
 * (the run directory and ctrun-agent are mounted at /.ctrun), false for a
 * shell.  The caller sets spec.argv.  With o->dry_run nothing is created. */
int ctr_setup_init(struct ctr_setup *c, const struct options *o, const struct topo *t,
		   char *const *envp, bool agent, struct err *e);
/* named_run.c: --name for this run: refused where it cannot be kept, else
 * the named container taken (named.h) and the spec pointed at it. */
int ctr_named_check(const struct ctr_ask *o, const struct topo *t, const struct ctr_spec *s,
		    struct err *e);
int ctr_named_take(struct ctr_setup *c, struct err *e);
/* --runtime to ask for: o->runtime, but "enroot" for auto when --name's
 * container was made by enroot (its changes are in enroot's container). */
const char *ctr_named_want(const struct ctr_ask *o);
/* After the run directory exists: a --save run's upper layer in it. */
int ctr_named_dirs(const struct ctr_setup *c, struct err *e);
/* save.c: --save PATH: its directory exists and is the caller's to write
 * (checked before the run: EXIT_USAGE); after it, the image and the
 * container's changes as a squashfs at PATH (temporary file, rename). */
int ctr_save_check(const char *path, struct err *e);
int ctr_save(const struct ctr_setup *c, const char *path, const char *compression, bool quiet,
	     struct err *e);
/* The adapter's plan for c->spec. */
int ctr_make_plan(const struct ctr_setup *c, struct ctr_plan *p, struct err *e);
/* Removes the run directory, releases the cache entry. */
void ctr_setup_free(struct ctr_setup *c);
/* The run directory of ctrun PID of this host, dead without removing it
 * (killed): removed, never following a link.  Under the run directory's
 * base of envp (as ctr_setup_init finds it); nothing when PID lives. */
int ctr_reap_rundir(char *const *envp, const char *host, long pid, struct err *e);

/* One run of the node's workers: like launch.c's supervision, but the
 * agent does it inside the container.  Fills r (status, failed rank,
 * signal, peer failure); -1 with e when ctrun itself failed (125) before
 * the container started. */
int container_run(const struct options *o, struct topo *t, char *const *envp,
		  const struct strv *argv, long restart, struct supervise_result *r,
		  struct err *e);
/* This node's workers of a run, with its restarts (launch_local): forked
 * here, or with o->image each run inside a container (container_run). */
int container_run_workers(const struct options *o, struct topo *t, char *const *envp,
			  struct err *e);

/* `ctrun shell` (and `ctrun env --image`, print): c->spec.argv run through
 * the agent's exec mode (set up with agent = true), so it sees the
 * environment a worker sees (agentspec_worker_env: every layer but the
 * torchrun contract), in the foreground; print: the agent prints that
 * environment instead. */
int ctr_run_exec(struct ctr_setup *c, const struct options *o, const struct topo *t,
		 char *const *envp, bool print, struct err *e);
/* ident.c: who the workers are inside (docs/containers.md "Identity and
 * home").  ctr_ident_init fills the spec's identity from the host's passwd
 * database; ctr_ident_mounts adds the home bind (where
 * the driver does not bind it itself), the generated /etc/passwd and
 * /etc/group and, for a shell that switches identity, the agent;
 * ctr_ident_files writes those files into the run directory (not under
 * --dry-run); ctr_ident_env sets HOME, USER and LOGNAME in env. */
int ctr_ident_init(struct ctr_setup *c, struct err *e);
int ctr_ident_mounts(struct ctr_setup *c, bool agent, struct err *e);
int ctr_ident_files(struct ctr_setup *c, struct err *e);
int ctr_ident_env(const struct ctr_spec *s, struct strv *env);
/* Whether the workers switch to the caller's identity in a user namespace
 * of their own (rootless OCI without --root: plan.ident_nest). */
bool ctr_ident_nests(const struct ctr_spec *s);

/* The GPUs this ctrun's container gets, as host ids: node mode, all of the
 * task's; task mode, the one its local rank picks (LOCAL_RANK modulo the
 * count, as ctrun-hook picks).  t->gpus is mapped through SLURM_STEP_GPUS
 * (both from envp) when Slurm numbered CUDA_VISIBLE_DEVICES inside its
 * device cgroup.  Empty when the task has none. */
int gpu_pin_select(const struct topo *t, char *const *envp, struct strv *out, struct err *e);
/* gpus.c: the container's GPUs and their pinning (spec.gpus, gpu_ids,
 * devices, hook, apptainer isolation, enroot's per-run hook). */
int ctr_gpus(struct ctr_setup *c, const struct topo *t, struct err *e);
/* devices.c: [gpu] source for the container's GPUs gpu_ids (NULL: all):
 * true when their CDI devices are to be used (c->cdi_gpus filled: cdi, or
 * auto with an nvidia.com/gpu spec that has every one of them); -v says
 * which source and why.  source = cdi without such a spec: -1 with e. */
int ctr_gpu_cdi(struct ctr_setup *c, const char *gpu_ids, bool *use, struct err *e);
/* devices.c: the devices phase: --device's and the GPUs' CDI devices into
 * spec.edits (edits.h) with the host's facts, checked against what the
 * runtime can apply; for a runtime that binds, their binds into
 * spec.mounts (destinations resolved in the image). */
int ctr_devices(struct ctr_setup *c, struct err *e);
/* fabric.c: the node's RDMA devices ([fabric] rdma) and, with GPUs,
 * GDRCopy's into spec.edits; then ctr_netstack (netstack.c): the host's
 * network stack ([fabric] libraries, lib_dirs, net_env), the libraries
 * bound after checking that the image can load them.  Called by the
 * devices phase before it checks the edits against the runtime. */
int ctr_fabric(struct ctr_setup *c, struct err *e);
int ctr_netstack(struct ctr_setup *c, struct err *e);

#endif
