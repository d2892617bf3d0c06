/* workerenv.h - the torchrun-compatible environment of each local worker. */
#ifndef CTRUN_WORKERENV_H
#define CTRUN_WORKERENV_H

#include "err.h"
#include "options.h"
#include "strv.h"
#include "topology.h"

/* The variables ctrun sets for local worker `i` (0 <= i < t->nproc), given
 * the environment it starts from: the contract (RANK, LOCAL_RANK, ...),
 * defaults that apply only when unset in `base`, the GPU choice in
 * isolation mode, then the user's --env.  Sorted by key. */
int workerenv_vars(const struct topo *t, const struct options *o, char *const *base,
		   long restart, long i, struct strv *out, struct err *e);

/* The environment workers start from without a container: `envp`, or
 * under --clean-env only what envctl_clean_keep keeps, the --env KEY
 * entries' host values, and a default PATH when none is left. */
int workerenv_base(const struct options *o, char *const *envp, struct strv *out);

/* workerenv_base(`base`) with workerenv_vars applied on top: the worker's whole environment. */
int workerenv_build(const struct topo *t, const struct options *o, char *const *base,
		    long restart, long i, struct strv *out, struct err *e);

#endif
