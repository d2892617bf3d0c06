/* asuser.h - the agent's switch from root of the runtime's user namespace
 * to the caller's uid and gid (docs/containers.md "Identity and home").
 *
 * Rootless OCI: runc must run as root of the user namespace ctrun makes
 * (0 -> the caller), and an unprivileged user can map only its own uid, so
 * the container's process starts as that root.  It then enters a user
 * namespace of its own mapping UID -> 0 and GID -> 0 of the outer one
 * (which is the caller on the host), as ch-run makes its own: processes
 * there are UID and GID, no capability survives their exec, files they
 * write are the caller's outside, and the host's supplementary groups
 * stay (unmapped, shown as the overflow gid: setgroups is denied).
 *
 * The supervisor calls it before sourcing the image's scripts or starting
 * workers (spec record X); `ctrun-agent --as-user UID GID COMMAND...` does
 * it and execs COMMAND (a shell has no supervisor). */
#ifndef CTRUN_ASUSER_H
#define CTRUN_ASUSER_H

#include <sys/types.h>

#include "err.h"

#define ASUSER_ARG "--as-user"

int asuser_enter(uid_t uid, gid_t gid, struct err *e);

/* ctrun-agent --as-user UID GID COMMAND [ARG...]: execvp's COMMAND on
 * PATH as UID:GID; returns only on failure (125, 126, 127, with a line). */
int asuser_exec(int argc, char **argv);

#endif
