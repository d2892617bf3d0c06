/* imagerc.h - an image's working directory (its config's WorkingDir), read
 * back from the /etc/rc that enroot's import and ctrun's unpack write.
 *
 * pyxis's tasks start where enroot's /etc/rc left the container: its
 * `cd "WORKDIR" && unset OLDPWD || exit 1` line (enroot's docker.sh), so
 * an NGC image's tasks start in /workspace.  ctrun's unpack writes the
 * same line, shell-quoted (images/imgconfig.c imgconfig_rc).  The SPANK
 * plugin's containers start in that directory (docs/slurm.md "Working
 * directory"); an image with no such line (no /etc/rc: a SIF, a root file
 * system made by hand) starts in "/", as enroot starts it.
 *
 * Folder core/: no dependencies.  Pure. */
#ifndef CTRUN_IMAGERC_H
#define CTRUN_IMAGERC_H

#include <stddef.h>

#define IMAGERC_PATH "/etc/rc"
#define IMAGERC_MAX (1u << 20) /* bytes of /etc/rc that are read */

/* The directory of the first line of text (len bytes, any bytes) that is,
 * after leading blanks, exactly `cd WORD && unset OLDPWD || exit 1`, WORD
 * one of
 *   "DIR"   enroot's: DIR holds no '"', '$', '`' or '\' (the shell would
 *           change them: such a line is no plain directory)
 *   'DIR'   ctrun's single quotes, each '\'' in it a quote
 *   DIR     ctrun's unquoted word: letters, digits and _-+./:=,@%
 * and DIR an absolute path.  1 with DIR in out (NUL-terminated), 0 when no
 * line is such a line or DIR does not fit in size bytes. */
int imagerc_workdir(const char *text, size_t len, char *out, size_t size);

#endif
