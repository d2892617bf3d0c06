/* drivers.h - the table of runtime drivers: everything ctrun knows about
 * one container runtime, so that no code outside a driver's folder asks
 * which runtime it is.
 *
 * A driver lives in its own folder under runner/container/rt/ (oci/ with
 * crun, enroot/, apptainer/ with singularity, charliecloud/), which
 * defines `const struct ctr_driver ctr_driver_NAME` next to its plan
 * function; CTR_DRIVERS (core/runtimes.h) lists it, one line per driver.  The names for --runtime, `ctrun --version` and the
 * auto choice come from this table (tests/unit/test_runtimes.sh checks that
 * options.c, the completion, ctrun.ini and the manual agree with it).
 */
#ifndef CTRUN_DRIVERS_H
#define CTRUN_DRIVERS_H

#include <stdbool.h>

#include "rt.h"

/* The drivers: CTR_DRIVERS, core/runtimes.h (adding a runtime: its
 * folder, and one line there). */
#include "runtimes.h"

/* Image kinds, for the rank table (enum image_kind, kind.h). */
#define CTR_KINDS IMAGE_KINDS
/* A rank: the driver runs the kind when --runtime names it, auto never
 * picks it (crun: auto's oci already looks for crun). */
#define CTR_NAMED_ONLY 255

/* What `ctrun --image IMG` with no command runs (cmd_shell.c). */
enum ctr_default_cmd {
	/* ctrun looks in the root: /etc/rc, else a SIF's runscript, through
	 * /bin/sh; else a shell (the runtime runs exactly what it is given). */
	DEFAULT_CMD_ROOT,
	/* The agent runs the adapter's entrypoint candidates (enroot: /etc/rc;
	 * apptainer: the runscript, /etc/rc) with no arguments, else a shell:
	 * spec.entrypoint and spec.run_default, argv the shell. */
	DEFAULT_CMD_ENTRYPOINT,
};

/* A runtime's hook file: what `ctrun hooks install|uninstall NAME` writes
 * into the runtime's hooks directory so that it runs ctrun-hook
 * (hooks_install.h; the driver's folder has its text and its place). */
struct ctr_hookfile {
	const char *file;               /* its name in the hooks directory */
	unsigned mode;                  /* its permissions (a script: 0755) */
	/* The text for a ctrun-hook at hook_path, a plain path
	 * (hooks_plain_path): malloc'd, NULL on ENOMEM. */
	char *(*text)(const char *hook_path);
	/* Whether text is one that text() wrote, for any hook path. */
	bool (*is_ours)(const char *text);
	/* The hooks directory when --dir does not name one (system: --system). */
	int (*dir)(bool system, char *const *envp, char *buf, size_t size, struct err *e);
};

struct ctr_driver {
	const char *name;               /* --runtime NAME, --dry-run's and -v's lines */
	const char *const *bins;        /* looked for on PATH in this order, NULL-ended:
					 * the first found runs the plan */
	/* Per image kind: 0 it cannot run it; 1, 2, ... --runtime auto's order
	 * (lowest first, ties in table order); CTR_NAMED_ONLY. */
	unsigned char rank[CTR_KINDS];
	enum ctr_root_need need;        /* what it needs before its plan (rt.h) */
	/* Prepare needs, on the host before the plan: */
	bool host_files;                /* it gives nothing of the host: ctrun binds /tmp,
					 * /etc/hosts and /etc/resolv.conf */
	bool image_env;                 /* spec.env is the process's whole environment:
					 * ctrun reads the image's (and for a shell adds
					 * the host's and the image's env scripts) */
	const char *const *rundir_dirs; /* directories made in the run directory, NULL-ended
					 * (OCI: its overlay's mount points), or NULL */
	enum ctr_default_cmd default_cmd;
	/* --runtime auto: the driver of ctrun's own start of this runtime's
	 * images (its name; NULL: none), taken instead where its binary is
	 * installed and this runtime's configuration on the node adds nothing
	 * to a container (ctr_pick.adds): the same container, started faster
	 * (enroot: "oci"; docs/decisions/runtimes.md, issue 33): adds says
	 * whether the runtime (binary bin), as configured here, adds anything
	 * (what, into why); NULL: it does. */
	const char *auto_own;
	/* auto, when the caller starts a container on many jobs' path
	 * (ctr_pick.start_fast: ctrun __hold): this driver of the table
	 * instead (its name; NULL: none), where its binary is installed (oci:
	 * crun, whose start is ~25 ms shorter than runc's). */
	const char *start_fast;
	bool (*adds)(const struct ctr_driver *d, const char *bin, char *const *envp, char *why,
		     size_t size);
	/* Identity (ident.c): ctrun binds the caller's home into the container
	 * (the runtime does not: OCI, charliecloud), and ctrun writes the
	 * container's /etc/passwd and /etc/group with the caller in them (the
	 * runtime does not: OCI; enroot's hook, apptainer and ch-run do). */
	bool ctrun_home;
	bool ctrun_passwd;
	/* --unshare: it can give the container network, IPC and UTS
	 * namespaces of its own (false: refused, one line). */
	bool unshares;
	/* umount:DST that finds no mount of ctrun's there is left to the
	 * runtime, which detaches one of its own (enroot: its home, from its
	 * hook); other drivers refuse it (mounts.h). */
	bool runtime_detach;
	/* What it can apply of a container's edits from the host (edits.h:
	 * CTR_EDIT_*; 0: environment and binds of the host's nodes and
	 * paths only); ctr_edits_check refuses the rest. */
	unsigned edits;
	/* The driver's own state in a run (its folder's struct: spec.own),
	 * zeroed when the driver is picked; fini frees what it holds (NULL:
	 * nothing).  0: none. */
	size_t own_size;
	void (*fini)(void *own);
	/* The phases of a run that the driver takes part in (runner/container/
	 * setup.c calls them in this order; docs/architecture.md): NULL is the
	 * default, which does nothing.  Each gets the spec so far and the
	 * request, and may fill its own state and the spec.
	 *   probe  after the pick and the caller's identity: what the driver
	 *          asks of its binary and the host (apptainer's release)
	 *   root   need ROOT_DRIVER: the root file system, its own way
	 *          (spec.rootfs, rootfs_real)
	 *   keep   --name or --save: the container kept its own way (the
	 *          default: the overlay's upper layer on disk, spec.named_upper)
	 *   gpus   the container has GPUs (spec.gpus, spec.gpu_ids): how the
	 *          runtime gets them */
	int (*probe)(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);
	int (*root)(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);
	int (*keep)(struct ctr_spec *s, const struct ctr_ask *a, const struct ctr_keep *k,
		    struct err *e);
	int (*gpus)(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);
	/* --runtime auto with --name: whether the kept container in dir is
	 * this runtime's own (then auto takes it); NULL: never. */
	bool (*kept)(const char *dir);
	/* The pure adapter: spec to plan (nothing executed or written). */
	int (*plan)(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);
	/* ctrun --version: what the driver says of its binary (its release),
	 * into buf; NULL: only its path. */
	void (*version)(const char *bin, char *buf, size_t size);
	/* The install phase, `ctrun hooks install NAME` (hooks_install.c): the
	 * runtime's hook file; NULL: it has none to install. */
	const struct ctr_hookfile *hookfile;
};

/* The table, NULL-ended, in CTR_DRIVERS order. */
extern const struct ctr_driver *const ctr_drivers[];

/* The driver named `name`, or NULL. */
const struct ctr_driver *ctr_driver_named(const char *name);
/* Whether it can run images of this kind (named or auto). */
bool ctr_driver_runs(const struct ctr_driver *d, enum image_kind kind);
/* --runtime auto's choices for this kind, in order: fills out (at most n,
 * NULL-ended when room) and returns their count. */
size_t ctr_driver_auto(enum image_kind kind, const struct ctr_driver **out, size_t n);

#endif
