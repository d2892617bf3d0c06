/* userns.h - a user namespace mapping the caller to root (userns.c): the
 * image holder's (holder.c) and, rootless, the OCI runtime's child's
 * (overlay.c). */
#ifndef CTRUN_USERNS_H
#define CTRUN_USERNS_H

#include <sys/types.h>

#include "err.h"

/* A user namespace (and mount namespace) mapping uid/gid to root. */
int userns_enter(uid_t uid, gid_t gid, struct err *e);

#endif
