/* spconf.h - the plugin's plugstack.conf arguments (site defaults):
 *
 *   required /usr/lib/x86_64-linux-gnu/slurm/spank_ctrun.so [ARG...]
 *
 *   ctrun=PATH                the ctrun binary the nodes run (default: the
 *                             one installed with the plugin)
 *   runtime=NAME              ctrun --runtime for every container, unless
 *                             --container-runtime says otherwise
 *   execute_entrypoint=BOOL   run the image's entrypoint unless
 *                             --[no-]container-entrypoint (pyxis's; false)
 *   container_scope=job|global  names of --container-name per job or per
 *                             user on the node (pyxis's; global)
 *   sbatch_support=BOOL       the options in sbatch and salloc too (pyxis's;
 *                             true)
 *   torchrun_env=BOOL         the torchrun contract in every task (true)
 *   default_workdir=image|srun  where a task starts without
 *                             --container-workdir: the image's working
 *                             directory (pyxis's rule, the default) or
 *                             srun's, bound at the same path (ctrun's)
 *
 * pyxis's enroot settings (runtime_path, use_enroot_load, importer,
 * use_squashfuse) are accepted and have no effect, so a pyxis line can be
 * reused as it is; anything else is an error naming it.  Pure. */
#ifndef CTRUN_SPCONF_H
#define CTRUN_SPCONF_H

#include <limits.h>
#include <stdbool.h>

#include "err.h"

struct sp_conf {
	char ctrun[PATH_MAX];
	char runtime[64];
	bool execute_entrypoint;
	bool scope_job;
	bool sbatch_support;
	bool torchrun_env;
	bool workdir_image;   /* default_workdir=image */
};

/* The defaults, then av[0..ac-1] over them; -1 with e naming the argument. */
int sp_conf_parse(struct sp_conf *c, int ac, char *const *av, struct err *e);

#endif
