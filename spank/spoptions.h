/* spoptions.h - the plugin's options: pyxis 0.24's `--container-*` (its
 * syntax, defaults and errors) and ctrun's own, their PYXIS_CONTAINER_*
 * defaults, and the ctrun command line they become (--container-mounts'
 * syntax: spmounts.h).
 *
 * Pure: values in, struct or one error line out (no Slurm call, no I/O),
 * so the unit tests and srun, sbatch and slurmstepd all parse alike.
 *
 * Folder spank/: the SPANK plugin build/spank_ctrun.so (docs/slurm.md "The
 * SPANK plugin"): options, plugstack arguments, the ctrun it starts per
 * node and step, the tasks joining its container.  May use: runner/agent/
 * (the hold message's names only), registry/ (image references), core/
 * (the GNUmakefile's include paths enforce it).  libc only at run time:
 * it is loaded into srun, sbatch, salloc, slurmd and slurmstepd.
 */
#ifndef CTRUN_SPOPTIONS_H
#define CTRUN_SPOPTIONS_H

#include <stdbool.h>

#include "err.h"
#include "strv.h"

struct sp_conf;

enum sp_opt {
	SP_IMAGE,          /* --container-image */
	SP_MOUNTS,         /* --container-mounts */
	SP_WORKDIR,        /* --container-workdir */
	SP_NAME,           /* --container-name */
	SP_SAVE,           /* --container-save */
	SP_MOUNT_HOME,     /* --[no-]container-mount-home */
	SP_REMAP_ROOT,     /* --[no-]container-remap-root */
	SP_ENTRYPOINT,     /* --[no-]container-entrypoint */
	SP_ENTRYPOINT_LOG, /* --container-entrypoint-log */
	SP_WRITABLE,       /* --container-writable, --container-readonly */
	SP_ENV,            /* --container-env */
	SP_UNSHARE,        /* --container-unshare */
	SP_RUNTIME,        /* ctrun's: --container-runtime */
	SP_DEVICE,         /* ctrun's: --container-device (CDI devices) */
	SP_NOPTS
};

/* One command-line option: a SPANK option is registered for each. */
struct sp_optdesc {
	const char *name;    /* without "--" */
	const char *arginfo; /* NULL: a flag */
	const char *usage;
	enum sp_opt opt;
	int val;             /* a flag's value: 1 for --x, 0 for --no-x */
};
extern const struct sp_optdesc sp_optdescs[];
extern const unsigned sp_noptdescs;

/* What was asked.  Tri-states are -1 when not given. */
struct sp_args {
	char *image;
	struct strv mounts;  /* ctrun's --mount values, SRC:DST[:ro...] */
	struct strv sources; /* the binds' sources as given (checked on the node:
			      * pyxis's "source path does not exist") */
	char *workdir;
	char *name;          /* --container-name without its flags */
	char *name_flags;    /* "auto", "create", "exec", "no_exec" */
	char *save;
	int mount_home, remap_root, entrypoint, entrypoint_log, writable;
	char *unshare;       /* as given, its names checked: ctrun's --unshare */
	struct strv env;     /* --container-env names */
	char *runtime;
	struct strv devices; /* --container-device names: ctrun's --device */
};

void sp_args_init(struct sp_args *a);
void sp_args_free(struct sp_args *a);

/* One option as srun, sbatch or slurmstepd hands it over (Slurm may hand
 * the same one twice: the same value again is no error).  -1 with one line
 * in e naming the option (EXIT_USAGE). */
int sp_args_set(struct sp_args *a, enum sp_opt opt, int val, const char *arg, struct err *e);

/* pyxis's PYXIS_CONTAINER_* variables, read through get(): each sets its
 * option when the command line did not. */
int sp_args_env(struct sp_args *a, const char *(*get)(const char *name, void *arg),
		void *arg, struct err *e);

/* Whether a container was asked for (--container-image or
 * --container-name); when not, each container option given is noted in
 * notes ("ignoring --container-mounts because ..."), as pyxis does. */
bool sp_args_enabled(const struct sp_args *a, struct strv *notes);

/* What one option alone cannot say: the image reference's syntax, the
 * options ctrun refuses (and why).  -1 with e. */
int sp_args_check(const struct sp_args *a, struct err *e);

/* The arguments of `ctrun __hold` for this step (after the binary and
 * the word): the container options, with the plugstack's defaults
 * (c); script: the batch script to bind into the container, read-only
 * (the batch step), else NULL; pmix: the step's PMIx server directory to
 * bind (slurmstepd's PMIX_SERVER_TMPDIR), else NULL. */
int sp_args_hold_argv(const struct sp_args *a, const struct sp_conf *c, const char *script,
		      const char *pmix, struct strv *argv, struct err *e);

#endif
