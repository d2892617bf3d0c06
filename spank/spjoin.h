/* spjoin.h - a task joins the node's container (in slurm_spank_task_init,
 * as the job's user, just before Slurm execs its command): the
 * namespaces of the holding agent, its root, a working directory. */
#ifndef CTRUN_SPJOIN_H
#define CTRUN_SPJOIN_H

#include "err.h"

/* fds: the hold message's descriptors (holdmsg.h, -1 = absent).  Joins,
 * in an order the kernel allows an unprivileged user: the user namespace
 * that owns the container's mount namespace, the mount namespace, the
 * other namespaces that are not already ours, the container's own user
 * namespace (whose identity the task takes); then chroot to its root and
 * chdir to cwd (relative to the root when it is), or to fallback (when not
 * NULL) where the container has no cwd.  -1 with e. */
int sp_join(const int *fds, const char *cwd, const char *fallback, struct err *e);

#endif
