/* spawn.h - running an external tool (unsquashfs, cp) from argv, never a shell. */
#ifndef CTRUN_SPAWN_H
#define CTRUN_SPAWN_H

#include <stdbool.h>

#include "err.h"

/* Runs argv[0] (PATH lookup) and waits.  The child dies with the caller
 * (PDEATHSIG), so a killed cache creator never leaves a tool writing into a
 * temp dir that the next creator is removing.  stdout goes to our stderr when
 * `show_stdout` (a tool's own progress bar), else to /dev/null; the tail of the
 * tool's stderr goes into the error.  Exit statuses listed in `ok_codes`
 * (terminated by -1; NULL = only 0) count as success. */
int spawn_wait(char *const argv[], bool show_stdout, const int *ok_codes, struct err *e);

#endif
