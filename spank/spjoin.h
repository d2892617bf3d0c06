/* spjoin.h - a task joins the node's container (in slurm_spank_task_init,
 * as the job's user, just before Slurm execs its command): the
 * namespaces of the holding agent, its root, a working directory. */
#ifndef CTRUN_SPJOIN_H
#define CTRUN_SPJOIN_H

#include <stdbool.h>

#include "err.h"

/* fds: the hold message's descriptors (holdmsg.h, -1 = absent).  Joins,
 * in an order the kernel allows an unprivileged user:
 *   1. the outer user namespace: of those the container's mount namespace
 *      is owned by or below, the child of ours (rootless OCI:
 *      runner/container/userns.h's U1, the user as themselves; enroot,
 *      ch-run: their own);
 *   2. the mount namespace, then the other namespaces not already ours;
 *   3. the hold's user namespace, where sp_join_hold_user says so: the
 *      runtime's root with --container-remap-root (U2).
 * Then chroot to its root and chdir to cwd (relative to the root when it
 * is), or to fallback (when not NULL) where the container has no cwd.
 * -1 with e. */
int sp_join(const int *fds, const char *cwd, const char *fallback, struct err *e);

/* Whether a task joins the hold's user namespace after the outer one:
 * depth, how many levels below the task's the mount namespace's owner
 * is (1: the outer one owns it); hold_below_owner, whether the hold's
 * namespace is a child of that owner (the agent's own, made to run as the
 * user under a runtime that is root: runner/agent/asuser.h).  Not when
 * the outer namespace already gives the user's identity (depth >= 2 and
 * the hold's is below the owner); else yes (where it is the outer one
 * already, sp_join has nothing more to do). */
bool sp_join_hold_user(unsigned depth, bool hold_below_owner);

#endif
