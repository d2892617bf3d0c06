/* rootemu.h - root emulation for a container in a user namespace, as
 * enroot gives every container and pyxis every task (docs/decisions/
 * environment-and-identity.md, "Root emulation").
 *
 * In a user namespace a package manager run as the mapped root fails:
 * apt's `_apt` sandbox calls setgroups and setresuid, dpkg chowns files to
 * ids the namespace does not map.  A seccomp filter makes those calls
 * succeed without doing anything: chown, lchown, fchown, fchownat, setuid,
 * setgid, setreuid, setregid, setresuid, setresgid, setgroups, and
 * setfsuid/setfsgid unless their argument is -1 (a query, answered as
 * usual).  Nothing is granted: a call that is faked changes nothing, the
 * process keeps the identity it had.  Every other call, and every call of
 * another ABI (i386 or x32 on x86_64: their numbers differ), runs as usual.
 *
 * The filter is inherited by every child and survives exec; installing it
 * needs no_new_privs (every runtime here starts the agent with it) or
 * CAP_SYS_ADMIN in the process's user namespace (a task that has just
 * joined one has it, until its exec), and it asks the kernel not to
 * turn on the speculative store bypass mitigation that a filter implies on
 * older kernels (SECCOMP_FILTER_FLAG_SPEC_ALLOW): the filter is no
 * sandbox, and must not slow the workers down. */
#ifndef CTRUN_ROOTEMU_H
#define CTRUN_ROOTEMU_H

#include <stdbool.h>

#include "err.h"

/* Whether this process is in a user namespace other than the host's (its
 * /proc/self/uid_map is not the identity of all ids).  false where /proc
 * cannot tell. */
bool rootemu_in_userns(void);

/* Installs the filter on the calling thread.  -1 with e (errno kept:
 * EACCES without the capability, EINVAL on a kernel without seccomp
 * filters or an architecture the filter does not know). */
int rootemu_install(struct err *e);

/* The agent's use: the filter where the agent runs in a user namespace;
 * where it cannot be installed, one line on stderr unless quiet and
 * nothing else changes.  Without either (EACCES) it is skipped without a
 * word: that runtime gives its processes the same identity calls as the
 * host does. */
void rootemu_apply(bool quiet);

#endif
