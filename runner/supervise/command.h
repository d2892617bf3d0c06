/* command.h - resolving a worker's command to a path, like execvp would.
 *
 * ctrun execs argv directly (never a shell), so it resolves argv[0] once
 * up front and can report 127/126 before any worker starts. */
#ifndef CTRUN_COMMAND_H
#define CTRUN_COMMAND_H

#include <stddef.h>

#include "err.h"

/* Search path used when PATH is unset (glibc's execvp uses "/bin:/usr/bin";
 * ours puts /usr/local/bin first, as most login shells do). */
#define COMMAND_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* Resolves argv0 like execvp with the given PATH (NULL = default path);
 * fills `out` (PATH_MAX).  A name containing '/' is checked as is; an
 * empty PATH element means the current directory.  Like execvp, a match
 * that cannot be executed does not stop the search, but is reported if
 * nothing better is found.
 * Errors: not found -> e->code 127 "command not found: X";
 * found but not executable / a directory -> 126. */
int command_resolve(const char *argv0, const char *path_env, char *out, size_t size,
		    struct err *e);

#endif
