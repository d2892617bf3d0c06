/* imageenv.h - the environment scripts of an image that Singularity or
 * apptainer built, applied inside the container by the agent for the
 * runtimes that do not (OCI, enroot).
 *
 * `singularity build` and `apptainer build/pull` keep an image's
 * environment in /.singularity.d/env/ *.sh: 10-docker2singularity.sh (the
 * Docker ENV, `export VAR=${VAR:-"value"}`), 90-environment.sh (the
 * definition's %environment: any shell), 99-base.sh (LD_LIBRARY_PATH) and
 * more.  Apptainer's exec action sources them all, in name order, with the
 * image's /bin/sh before it execs the command.  The agent does the same:
 * the image's /bin/sh, run as the workers will run, sources the scripts
 * with a fixed command line (no user string is ever part of it) and then
 * execs the agent again with IMAGEENV_PRINT_ARG, which writes the
 * resulting environment back through a pipe, read bounded and under a
 * time limit. */
#ifndef CTRUN_IMAGEENV_H
#define CTRUN_IMAGEENV_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

#define IMAGEENV_DIR "/.singularity.d/env"
#define IMAGEENV_SH "/bin/sh"
#define IMAGEENV_PRINT_ARG "--print-env"
/* The descriptor the printer writes to: the scripts' stdout is the agent's
 * stderr, so what a script echoes (a banner) shows where apptainer shows it
 * and never mixes with the environment. */
#define IMAGEENV_FD 3
#define IMAGEENV_MAX (4u << 20)    /* bytes of environment read back */
#define IMAGEENV_TIMEOUT_MS 60000 /* a script that hangs ends the run, not blocks it */

/* `sh -c imageenv_exec_script sh COMMAND...`: apptainer's exec action
 * (/.singularity.d/actions/exec) with fixed text: sources the image's
 * IMAGEENV_DIR/ *.sh, then execs COMMAND, which stays argv.  For what runs
 * without the agent (`ctrun shell` under runc). */
extern const char imageenv_exec_script[];

/* Whether dir holds a *.sh that is a regular file (what the action
 * script's `[ -f "$script" ]` sources). */
bool imageenv_has_scripts(const char *dir);

/* The printer's side: every entry of env followed by a NUL, then one more
 * NUL (an entry is never empty), so a reader tells a complete environment
 * from a shell that died half-way.  0, or -1 with errno. */
int imageenv_print(int fd, char *const *env);

/* Pure: the printer's output (buf, len bytes) as an environment into out.
 * The variables a shell sets for itself (PWD, OLDPWD, SHLVL, _) are not
 * the image's: they keep their value from `before` (absent if it had
 * none).  Output without its closing empty entry, or an entry without a
 * name and '=', is refused. */
int imageenv_parse(const char *buf, size_t len, char *const *before, struct strv *out,
		   struct err *e);

/* Runs `sh -c SCRIPT` with environment env: sources each regular
 * dir/ *.sh in the shell's glob order, as apptainer's exec action does,
 * then execs `printer IMAGEENV_PRINT_ARG`.  The resulting environment goes
 * into out (imageenv_parse).  A script that fails the shell, prints
 * nothing, more than IMAGEENV_MAX bytes or takes longer than timeout_ms is
 * an error naming it. */
int imageenv_source(const char *sh, const char *dir, const char *printer, char *const *env,
		    int timeout_ms, struct strv *out, struct err *e);

#endif
