/* spenv.h - a task's environment in the container: the job's, with what
 * the container changed of it, then the torchrun contract (pure).
 *
 * The holding agent's environment is what a shell in the container gets
 * from the job's environment the plugin gave `ctrun __hold`
 * (docs/containers.md's table).  A task keeps its own Slurm environment
 * (SLURM_PROCID, its CUDA_VISIBLE_DEVICES, PMI_RANK...) and takes every
 * variable the container set or changed, and loses every variable the
 * container removed (the host's LD_LIBRARY_PATH, LD_PRELOAD...). */
#ifndef CTRUN_SPENV_H
#define CTRUN_SPENV_H

#include "strv.h"

/* set: KEY=VALUE of `held` that `given` does not have exactly; unset:
 * the keys of `given` that `held` lacks, but CTRUN_* (the agent leaves
 * ctrun's settings out, a task keeps them).  -1 out of memory. */
int sp_env_diff(char *const *given, char *const *held, struct strv *set, struct strv *unset);

/* `ctrun env` output (KEY=VALUE lines, blank lines between blocks): the
 * first block's variables into out; lines without '=' are skipped. */
int sp_env_lines(const char *text, struct strv *out);

#endif
