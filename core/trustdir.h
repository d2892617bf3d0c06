/* trustdir.h - a directory the caller may write files into by name,
 * reached from "/" one component at a time so that no other local user
 * can redirect it: the per-job log directories of --log-dir.
 *
 * Log directories often sit in a place everyone can write (/tmp, a
 * scratch file system) under names anyone can predict (job ids), so
 * another user can create a directory or a symlink there first and have
 * ctrun (often root) write job output through it.  The rule, checked on a
 * descriptor of each step, never on a path string:
 *
 *   - every directory on the way belongs to root or to the caller, and no
 *     one else can write it, unless it is sticky (/tmp): there only the
 *     entries' owners can rename or remove them, so a sticky directory
 *     is a place where the caller makes or finds a directory of its own;
 *   - every symlink on the way belongs to root or to the caller (then it
 *     is followed, at most 40, as the kernel would), never to anyone else;
 *   - the last directory belongs to the caller and no one else can write
 *     it; what is missing is created (mkdirat, `mode`).
 * For root only root's directories and links count.  Anything else: -1
 * with e (EXIT_CTRUN) naming the step, its owner and mode, and the fix. */
#ifndef CTRUN_TRUSTDIR_H
#define CTRUN_TRUSTDIR_H

#include <sys/types.h>

#include "err.h"

/* path (absolute, or relative to the working directory), made where
 * missing and checked as above.  Returns an O_PATH descriptor of the last
 * directory (caller closes), or -1 with e. */
int trustdir_open(const char *path, mode_t mode, struct err *e);

#endif
