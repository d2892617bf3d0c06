/* slurmlib.h - the installed libslurm, loaded at run time, never linked.
 *
 * ctrun must run where Slurm's library is absent or of another release, so
 * it is loaded with dlopen: the library of the Slurm in use (slurmfind.h:
 * $CTRUN_LIBSLURM, the install of srun on PATH, of $SLURM_CONF), else the
 * dynamic linker's libslurm.so.N, from SLURMLIB_NEWEST_SONAME down to .30
 * (22.05 is .38, 26.05 .45), then libslurm.so.  Only
 * slurm_hostlist_{create,count,shift,nth,destroy} are used, with the
 * hostlist as an opaque pointer: that works whether hostlist_t is the
 * pointer typedef of Slurm <= 23.02 or the struct of later releases, where
 * functions take hostlist_t *.  Shifted names are freed with free(), as
 * slurm_hostlist_shift(3) says.
 *
 * libslurm runs in a short-lived child process (fork, no exec), never in
 * ctrun itself, because on bad input libslurm 22.05 calls exit(1) (more
 * than 262144 ranges in a bracket), dereferences NULL
 * (n[18446744073709551614-18446744073709551615]), never finishes on
 * a[0-65535]b[0-65535]c[0-65535] or n[99999999999999999999][1] (a loop up
 * to ULONG_MAX), and logs to stderr; and because mapping it costs about
 * 1.2 MiB of RSS that the supervisor should not carry.  The
 * child's stdout and stderr go to /dev/null; it sends the names back over
 * a pipe; a crash, an exit or $CTRUN_LIBSLURM_TIMEOUT_MS (default 5000)
 * without an answer is a failure with errno EIO or ETIMEDOUT.  A run costs
 * about 1 ms (12 ms for 65536 hosts, where the builtin takes 2 ms).
 *
 * The caller must not reap children it did not start (a SIGCHLD handler
 * with waitpid(-1)) while this runs; if it does, the answer still counts
 * when it arrived complete.  Not thread-safe (slurmlib_available caches). */
#ifndef CTRUN_SLURMLIB_H
#define CTRUN_SLURMLIB_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

/* ctrun's caps on one hostlist expansion (libslurm has none): hosts, and
 * bytes of the names counting one terminator each.  Enforced on both paths:
 * the builtin parser (hostlist.c) and libslurm's answer (here). */
#define HOSTLIST_MAX_HOSTS (1UL << 20)
#define HOSTLIST_MAX_BYTES (64UL << 20)

/* Sonames tried from the dynamic linker, newest first: well past 26.05's
 * .45, so the next releases are found without a new ctrun. */
#define SLURMLIB_NEWEST_SONAME 60

/* Whether a libslurm with the hostlist functions can be loaded (checked in
 * a child once per choice of library, then cached). */
bool slurmlib_available(void);
/* Whether an earlier check or expansion found no loadable libslurm (for
 * this choice of library); false when none has looked yet.  Costs no
 * child: an expansion loads the library and answers in one. */
bool slurmlib_absent(void);

/* One line for -v: the library loaded and why that one
 * ("/opt/slurm-new/lib/libslurm.so.45.0.0 (the Slurm of srun on PATH
 * (/opt/slurm-new/bin/srun))"), or why there is none. */
void slurmlib_describe(char *buf, size_t size);

/* libslurm's expansion of s, as it is (see hostlist.h for where it is
 * lenient), with ctrun's caps HOSTLIST_MAX_HOSTS and HOSTLIST_MAX_BYTES.
 * out must be empty on entry.  Returns 0, or -1 with e set, out empty, and
 * errno: EINVAL libslurm refused s or s is over a cap; ENOENT no libslurm;
 * EIO the child crashed or exited; ETIMEDOUT; ENOMEM or another errno
 * from pipe/fork/poll. */
int slurmlib_hostlist_expand(const char *s, struct strv *out, struct err *e);

#endif
