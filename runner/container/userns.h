/* userns.h - the user namespaces of a rootless container (userns.c): the
 * image holder's (holder.c), the OCI runtime's or ch-run's child's
 * (overlay.c), --save's (save.c).
 *
 * Two, one in the other: U1, a child of the caller's, maps the caller's
 * uid and gid to themselves ("UID UID 1"), and U2 in it maps them to root
 * ("0 UID 1"), with a mount namespace of its own.  The runtime runs as
 * root of U2, so everything it makes (the container's mount, UTS, IPC,
 * network namespaces) belongs to U2.  U1 is what the SPANK plugin's tasks
 * join without --container-remap-root (spank/spjoin.h): there they are
 * the user with the map pyxis's tasks have, no capability in U1 itself,
 * and, as the owner of U2 in its parent, every capability over the
 * container's namespaces only (`hostname` under --container-unshare=uts).
 * U2 is what they join with it (root, "0 UID 1"). */
#ifndef CTRUN_USERNS_H
#define CTRUN_USERNS_H

#include <sys/types.h>

#include "err.h"

/* Enters U1, then U2 with a mount namespace of its own (above); the
 * caller is root of U2 afterwards.  -1 with e. */
int userns_enter(uid_t uid, gid_t gid, struct err *e);

#endif
