/* drivers.h - the table of runtime drivers: everything ctrun knows about
 * one container runtime, so that no code outside a driver's folder asks
 * which runtime it is.
 *
 * A driver lives in its own folder under runner/container/rt/ (oci/,
 * enroot/, apptainer/), which defines `const struct ctr_driver
 * ctr_driver_NAME` next to its plan function; CTR_DRIVERS below lists it,
 * one line per driver.  The names for --runtime, `ctrun --version` and the
 * auto choice come from this table (tests/unit/test_runtimes.sh checks that
 * options.c, the completion, ctrun.ini and the manual agree with it).
 */
#ifndef CTRUN_DRIVERS_H
#define CTRUN_DRIVERS_H

#include <stdbool.h>

#include "rt.h"

/* The drivers, in the order --version lists their binaries and the
 * messages list their names.  Adding a runtime: its folder, and one line
 * here. */
#define CTR_DRIVERS(X) \
	X(enroot)      \
	X(apptainer)   \
	X(singularity) \
	X(oci)         \
	X(crun)        \
	X(charliecloud)

/* Image kinds, for the rank table (enum image_kind, kind.h). */
#define CTR_KINDS (IMAGE_DIR + 1)
/* A rank: the driver runs the kind when --runtime names it, auto never
 * picks it (crun: auto's oci already looks for crun). */
#define CTR_NAMED_ONLY 255

/* How a runtime passes the GPUs (runner/container/gpus.c). */
enum ctr_gpu_pass {
	/* The device nodes in spec.devices, and ctrun-hook in config.json when
	 * it is next to ctrun (OCI). */
	GPU_PASS_HOOK,
	/* enroot's own hooks; ctrun-hook added through a per-run
	 * ENROOT_CONFIG_PATH where it is not installed (spec.enroot_hook). */
	GPU_PASS_ENROOT,
	/* --nv; with --gpu-isolation only the container's GPUs' nodes and the
	 * driver's files that ctrun-hook names (spec.driver, spec.home). */
	GPU_PASS_NV,
	/* The runtime binds the host's /dev; the driver's files that ctrun-hook
	 * names go in by name (spec.driver), the image is never written
	 * (charliecloud, where `ch-fromhost --nvidia` would copy them in). */
	GPU_PASS_FILES,
};

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

struct ctr_driver {
	const char *name;               /* --runtime NAME, --dry-run's and -v's lines */
	const char *const *bins;        /* looked for on PATH in this order, NULL-ended:
					 * the first found runs the plan */
	/* Per image kind: 0 it cannot run it; 1, 2, ... --runtime auto's order
	 * (lowest first, ties in table order); CTR_NAMED_ONLY. */
	unsigned char rank[CTR_KINDS];
	enum ctr_root_need root;        /* what it needs before its plan (rt.h) */
	/* Prepare needs, on the host before the plan: */
	bool app_version;               /* spec.app from `BIN --version` */
	bool host_files;                /* it gives nothing of the host: ctrun binds /tmp,
					 * /etc/hosts and /etc/resolv.conf */
	bool image_env;                 /* spec.env is the process's whole environment:
					 * ctrun reads the image's (and for a shell adds
					 * the host's and the image's env scripts) */
	const char *const *rundir_dirs; /* directories made in the run directory, NULL-ended
					 * (OCI: its overlay's mount points), or NULL */
	enum ctr_gpu_pass gpus;
	enum ctr_default_cmd default_cmd;
	/* --runtime auto: the driver of ctrun's own start of this runtime's
	 * images (its name; NULL: none), taken instead where its binary is
	 * installed and this runtime's configuration on the node adds nothing
	 * to a container (ctr_pick.adds): the same container, started faster
	 * (enroot: "oci"; docs/decisions.md, issue 33). */
	const char *auto_own;
	/* Identity (ident.c): ctrun binds the caller's home into the container
	 * (the runtime does not: OCI, charliecloud), and ctrun writes the
	 * container's /etc/passwd and /etc/group with the caller in them (the
	 * runtime does not: OCI; enroot's hook, apptainer and ch-run do). */
	bool ctrun_home;
	bool ctrun_passwd;
	/* The pure adapter: spec to plan (nothing executed or written). */
	int (*plan)(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);
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
