/* rt.h - the runtime-neutral description of one container, and the
 * adapters that turn it into the exact commands and files of a runtime.
 *
 * An adapter (enroot/, apptainer/, oci/, charliecloud/: one folder per
 * runtime, each a line of core/runtimes.h, drivers.h) is a pure function from
 * a ctr_spec to a ctr_plan: argv, environment changes and the contents of
 * the files to write.  Nothing is executed or written there, so golden tests
 * compare plans byte for byte and --dry-run prints them.  runner/container/ picks
 * the runtime, writes the files and runs the plan.
 *
 * Folder runner/container/rt/: the runtime-neutral container (spec, plan,
 * mounts), the driver table (drivers.h) and, one sub-folder per runtime
 * (oci/, enroot/, apptainer/, charliecloud/), the pure adapters, the
 * phases each takes part in and its own state.
 * May use: images/, core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_RT_H
#define CTRUN_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cache/cache.h"
#include "edits.h"
#include "err.h"
#include "image.h"
#include "mounts.h"
#include "strv.h"

/* A runtime: its entry in the driver table (drivers.h); NULL = none. */
struct ctr_driver;

/* build/ctrun-worker in the container: the workers of `check` and `bench`
 * (ctrun itself needs libraries an image lacks).  A run whose command is
 * this path gets it mounted there, next to the agent. */
#define CTR_WORKER_BIN "/.ctrun/worker"
/* The GPU driver's libraries, where a runtime does not bind them itself
 * (apptainer's isolation, charliecloud): bound onto empty files that ctrun
 * creates in the run directory (so every release finds the mount point),
 * on the workers' LD_LIBRARY_PATH. */
#define CTR_DRIVER_DIR "/.ctrun/driver"
/* The host's network stack ([fabric] libraries), on the workers'
 * LD_LIBRARY_PATH (runner/container/netstack.c). */
#define CTR_NETSTACK_DIR "/.ctrun/fabric/lib"

/* --unshare's namespaces (spec.unshare). */
enum { CTR_UNSHARE_NET = 1, CTR_UNSHARE_IPC = 2, CTR_UNSHARE_UTS = 4 };

/* The driver's name, "none" for NULL. */
const char *ctr_runtime_name(const struct ctr_driver *rt);

/* What a runtime needs on the host before its plan can be made (the root
 * file system decision in runner/container/ reads only this, never the
 * runtime itself). */
enum ctr_root_need {
	ROOT_IMAGE_FILE, /* it reads the image file itself */
	ROOT_TREE,       /* a directory tree: the image directory, the squashfs or SIF
			  * mounted by the holder, else a node cache entry */
	ROOT_DRIVER,     /* its own: the driver's root phase makes it (drivers.h root) */
};
/* The driver's `need` (drivers.h); NULL: ROOT_IMAGE_FILE. */
enum ctr_root_need ctr_root_need(const struct ctr_driver *rt);

/* --image-mode. */
enum ctr_image_mode { IMAGE_MODE_AUTO, IMAGE_MODE_MOUNT, IMAGE_MODE_UNPACK };

/* What the user asked of the container, and where ctrun runs: the options
 * and the environment as every phase of a run reads them, made once from
 * the options (runner/container/ask.c), so that the phases of ctrun's core
 * and of a driver (drivers.h) read the same and nothing below reads the
 * options themselves. */
struct ctr_ask {
	char *const *envp;             /* ctrun's environment */
	const char *image;             /* --image as given */
	const char *runtime;           /* --runtime; NULL = auto */
	bool start_fast;               /* auto: crun before runc (ctr_pick) */
	bool home_env;                 /* the home bound: $HOME's, else the passwd entry's */
	enum ctr_image_mode image_mode;
	const struct strv *mounts;     /* --mount SRC[:DST[:OPTS]], in order */
	const char *workdir;           /* --workdir; NULL = ctrun's own, bound */
	const char *log_dir;           /* --log-dir; NULL = none */
	const char *stage;             /* --stage; NULL = auto */
	const char *nv;                /* GPUs: "auto", "true", "false" */
	const char *imex;              /* [gpu] imex_channels (core/imex.h); NULL = none */
	bool gpu_isolation;            /* each worker its own GPU only */
	const char *name;              /* --name: the container kept; NULL = none */
	bool name_reset;               /* --name-reset */
	const char *save;              /* --save PATH; NULL = none */
	const char *unshare;           /* --unshare NS[,NS...]; NULL = none */
	const struct strv *devices;    /* --device: CDI device names, in order */
	const char *cdi_spec_dirs;     /* ':'-separated; NULL = the standard ones */
	const char *gpu_source;        /* [gpu] source: "auto", "cdi", "hook" */
	/* [fabric]: the node's RDMA devices ("auto", "true", "false") and the
	 * host's network stack (fabric.c) */
	const char *rdma;
	const struct strv *fabric_libs, *fabric_dirs, *fabric_env;
	const struct strv *fabric_devices; /* CDI devices of the network stack */
	bool fabric_keep_image;        /* on_conflict = image */
	bool saves;                    /* this task saves after the run (node rank 0's first) */
	bool worker;                   /* the command is ctrun-worker (check, bench) */
	bool dry_run, quiet, writable;
	long verbose;
	/* The node cache's settings ([cache]); NULL when they cannot be had
	 * (cache_err says why, to the phase that needs the cache). */
	const struct cache_cfg *cache;
	struct err cache_err;
};
/* The node cache's settings, or NULL with e (the reason they cannot be had). */
static inline const struct cache_cfg *ctr_ask_cache(const struct ctr_ask *a, struct err *e)
{
	if (a->cache == NULL)
		*e = a->cache_err;
	return a->cache;
}

/* The keep phase's place (drivers.h keep): the named container's directory
 * (images/cache/named.h, taken and locked), or NULL for a --save run without
 * --name (its layer lives in the run directory, RUNDIR/save). */
struct ctr_keep {
	const char *dir;
	bool *rundir_made;  /* the run directory exists; set by whoever makes it */
};

struct ctr_spec {
	const struct ctr_driver *rt; /* the runtime (drivers.h) */
	const char *bin;          /* the runtime binary: "runc", "/usr/bin/apptainer", ... */
	const char *id;           /* container id (OCI) */
	const char *image;        /* absolute path of the image file or directory */
	enum image_kind kind;
	const char *rootfs;       /* host directory of the image's root file system, when
				   * there is one (OCI: the overlay's lower layer; enroot:
				   * the container in its data directory), or --dry-run's
				   * text of what a run would make */
	bool rootfs_real;         /* rootfs is a directory ctrun can read */
	const char *rundir;       /* ctrun's directory of generated files on the host */
	struct ctr_mounts mounts; /* in mount order; destinations already resolved */
	const char *cwd;          /* working directory in the container, NULL = default */
	struct strv env;          /* OCI: the process's environment (the image's own) */
	struct strv argv;         /* what runs in the container */
	bool gpus;                /* GPU passthrough (--nv, NVIDIA_VISIBLE_DEVICES, devices) */
	bool slurm;               /* inside a Slurm step: the step owns the GPU choice */
	const char *gpu_ids;      /* "0,1": the container's GPUs (host ids), NULL = all */
	const char *imex;         /* with gpus: IMEX channels to pass (core/imex.h), NULL = none */
	bool tty;                 /* interactive: a terminal for the process */
	bool host_pid;            /* the host's PID namespace and its /proc bound, where the
				   * driver would make its own (OCI's) (ctrun __hold: tasks
				   * that join the container are not in its PID namespace,
				   * and would see a /proc without themselves) */
	bool entrypoint;          /* run the image's entrypoint / rc script first */
	/* --name (OCI, charliecloud): the overlay's upper and work directories
	 * on disk, in the node cache (images/cache/named.h), instead of on the
	 * run's tmpfs; NULL = the tmpfs.  enroot: its own container there. */
	const char *named_upper, *named_work;
	/* --name shared by the runs of it at once (runner/container/namedroot.h):
	 * the overlay over named_upper is mounted once, elsewhere; the runtime's
	 * child attaches named_tree (a detached copy of that mount) as the
	 * root, in the named container's user namespace named_user (-1: none,
	 * as root).  false: the child mounts its own overlay, as before. */
	bool named_shared;
	int named_tree, named_user;
	/* --name, --save: the kept container is rootfs itself, whole (enroot's
	 * own container), not named_upper over it. */
	bool kept_whole;
	bool writable;            /* --writable: the root writable for the run, discarded
				   * at its end (OCI/charliecloud: the overlay's tmpfs;
				   * enroot: --rw over its own start of the squashfs;
				   * apptainer: --writable-tmpfs) */
	bool agent;               /* argv is ctrun-agent (which enters cwd itself) */
	bool run_default;         /* the image's default command (no command given): the
				   * agent runs the first entrypoint alone, else argv
				   * (a shell) */
	bool quiet;               /* ctrun -q: the runtime's own notes too */
	bool rootless;            /* the caller is not root: user namespace (OCI) */
	uid_t uid;
	gid_t gid;
	/* Identity (docs/containers.md "Identity and home"): workers run as the
	 * caller (uid, gid, name, HOME) unless as_root (--root: uid 0 inside);
	 * the home is bound unless no_home (--no-home). */
	bool as_root;
	bool no_home;
	/* --unshare: namespaces of the container's own (CTR_UNSHARE_*); 0: the
	 * host's network, IPC and UTS namespaces, as always. */
	unsigned unshare;
	const char *user;         /* the caller's login name (getpwuid), else its uid */
	const char *user_home;    /* the caller's home directory (getpwuid), else "/" */
	const char *home;         /* the home bound and named by HOME: user_home, or the
				   * caller's $HOME (ask.home_env, enroot's rule) */
	/* Rootless, and the image has no /etc/passwd or /etc/group where its
	 * /etc (or the nearest directory above) is another user's: the overlay
	 * cannot get a mount point there (ident.c), so a runtime that binds its
	 * own passwd (ch-run) is told not to; the ids stay unnamed. */
	bool no_idfile_points;
	/* OCI from a mounted image: the image holder (runner/container/holder.h)
	 * whose namespaces the runtime's child joins, by descriptor (a pid
	 * could be reused), and the rootfs there (rootfs is the same tree as
	 * ctrun sees it, /proc/self/fd/N); holder false = unpacked. */
	bool holder;
	int holder_mnt, holder_user; /* user: -1 when not rootless */
	const char *rootfs_ns;
	/* Under srun --mpi=pmi2, a task's one worker: the step's PMI2 socket
	 * (PMI_FD) on the host, which the container's process gets as
	 * descriptor 3 (the runtime's child moves it there; the driver has
	 * the runtime keep it: OCI --preserve-fds 1); 0 = none. */
	int pmi_fd;
	/* What the container needs from the host beyond the mounts above:
	 * device nodes, mounts, environment, hooks, groups (edits.h). */
	struct ctr_edits edits;
	/* The driver's own state in this run: its folder's struct (drivers.h
	 * own_size), which its phases fill and its plan reads; NULL = none. */
	void *own;
};

/* rootfs when ctrun can read it, else NULL. */
static inline const char *ctr_rootfs_dir(const struct ctr_spec *s)
{
	return s->rootfs_real ? s->rootfs : NULL;
}

struct ctr_file {
	char *path;
	char *data;
	size_t len;
	unsigned mode;         /* 0644 unless ctr_plan_exec_file */
};

struct ctr_plan {
	struct strv argv;      /* the command run on the host */
	struct strv setenv;    /* K=V added to (or replacing in) its environment */
	struct strv unsetenv;  /* names removed from its environment; "PREFIX*" removes
				* every name that starts with PREFIX ... */
	struct strv keepenv;   /* ... except these names */
	/* For the agent (agentspec.h): variables over the container's own (O),
	 * library directories (J), entrypoint candidates (Y), apptainer's
	 * environment to complete (N), the image's /.singularity.d/env scripts
	 * to source (M: the runtime does not); with gpus_renumbered the container's
	 * GPUs are 0..n-1 inside, so a worker's own GPU (--gpu-isolation) is
	 * named by its position. */
	struct strv agent_env;
	struct strv agent_libdirs;
	struct strv agent_entry;
	bool agent_complete_env;
	bool agent_image_scripts;
	/* The runtime passes ctrun's environment into the container (enroot,
	 * ch-run): --clean-env has the agent remove it (spec record D). */
	bool agent_host_env;
	bool gpus_renumbered;
	struct ctr_file *files;
	size_t nfiles;
	struct strv links;     /* pairs: TARGET, PATH of a symbolic link to make */
	/* OCI: before exec, enter a private mount namespace (and a user namespace
	 * mapping the caller to root when rootless), mount a tmpfs at ovl_tmp and
	 * an overlay (lower: ovl_lower, upper and work on the tmpfs) at
	 * ovl_merged, and create the mount points of spec->mounts in it. */
	bool ovl;
	char *ovl_lower, *ovl_tmp, *ovl_merged;
	/* With ovl: a tmpfs over /sys/fs/cgroup/unified where a hybrid host's
	 * cgroup2 holds a controller (crun refuses that host; runc uses v1). */
	bool hide_cgroup2;
	/* With ovl: also bind the source of every spec->mounts[N] at
	 * ovl_tmp/b/N with its options (ro, nosuid and nodev unless asked),
	 * for a runtime that binds read-write whatever it is asked
	 * (charliecloud's ch-run). */
	bool ovl_stage;
	/* With ovl: the mount points the runtime itself mounts on (ch-run's
	 * /dev, /proc, /sys, /tmp, /etc/passwd, /etc/group; src is the
	 * runtime's binary, for the messages), made in the overlay's upper
	 * layer where the image has nothing at that path: an image made
	 * without its pseudo file systems, or FROM scratch.  The image and
	 * the node cache's entry stay as they are. */
	struct ctr_mounts ovl_points;
	/* The runtime refuses to start without $USER (ch-run): where the
	 * environment has none, USER is the caller's login name (else uid). */
	bool need_user;
	/* The workers (or the shell) switch from root of the runtime's user
	 * namespace to the caller's uid and gid in a user namespace of their
	 * own (the agent's spec record X, or `/.ctrun/agent --as-user`):
	 * rootless OCI, where the runtime must run as root of ctrun's. */
	bool ident_nest;
};

void ctr_plan_free(struct ctr_plan *p);
/* Adds a generated file (data copied); missing parent directories of a
 * planned file or link are created (0755) when the plan is written. */
int ctr_plan_file(struct ctr_plan *p, const char *path, const char *data, size_t len,
		  struct err *e);
/* The same, executable (0755): a hook script. */
int ctr_plan_exec_file(struct ctr_plan *p, const char *path, const char *text, struct err *e);
/* A symbolic link PATH -> TARGET. */
int ctr_plan_link(struct ctr_plan *p, const char *target, const char *path, struct err *e);

/* What the runtime is picked for: `want` ("auto" or a name of the driver
 * table), the image and its kind, and how a binary is found (`have` tells
 * whether it is on PATH and where; NULL = look). */
struct ctr_pick {
	const char *want;
	enum image_kind kind;
	const char *image;
	bool (*have)(const char *bin, char *path, size_t size);
	/* auto, for a driver with an auto_own (drivers.h) found: whether this
	 * runtime (binary bin), as configured on the node, adds to a container
	 * something ctrun's own start does not, and what (into why).  NULL:
	 * the driver's own adds (drivers.h; a driver without one is taken); a
	 * test gives its own. */
	bool (*adds)(const struct ctr_driver *d, const char *bin, char *const *envp, char *why,
		     size_t size);
	char *const *envp; /* ctrun's environment, for adds */
	/* auto: a driver's start_fast instead of it where that is installed
	 * (drivers.h; ctrun __hold: a container start on every step's path;
	 * docs/benchmarks.md). */
	bool start_fast;
	/* Out: why auto took one runtime of two that could run the image (for
	 * -v), "" when it had no such choice; NULL: not wanted. */
	char *note;
	size_t note_size;
};
/* Fills *rt and the binary's path.  None fits: EXIT_CTRUN naming what was
 * looked for; an unknown name: EXIT_USAGE. */
int ctr_pick_runtime(const struct ctr_pick *q, const struct ctr_driver **rt, char *bin,
		     size_t size, struct err *e);
/* PATH lookup of an executable. */
bool ctr_which(const char *bin, char *path, size_t size);

#endif
