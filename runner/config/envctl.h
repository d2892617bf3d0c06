/* envctl.h - the user's control over the workers' environment: --env KEY
 * (the host's value over the image's), --env-file FILE and --clean-env.
 *
 * Pure functions (bytes in, entries or an error out) but envctl_file_load,
 * which reads one file with a bound.  An entry is "KEY=VALUE" (set over
 * everything) or "KEY" (the host's value, over the image's; nothing when the
 * host has no KEY, as pyxis's --container-env).  docs/containers.md
 * "Binds, working directory, environment" has the whole table.
 *
 * Folder runner/config/.  May use: core/.
 */
#ifndef CTRUN_ENVCTL_H
#define CTRUN_ENVCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

#define ENVFILE_MAX (1u << 20) /* bytes of one --env-file */

/* The PATH workers get when nothing else gives one (--clean-env without a
 * container, an image without PATH): docker's default. */
#define ENVCTL_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Checks one --env value (CLI, `env =` of the ini, CTRUN_ENV): KEY=VALUE or
 * KEY; KEY is not empty and, for the KEY form, not a contract variable
 * (envctl_contract). `where` names the source in the error (exit 2). */
int envctl_check(const char *entry, const char *where, struct err *e);

/* The variables ctrun sets for each worker (the torchrun contract): the
 * host's value of one would give every worker the same rank. */
bool envctl_contract(const char *key, size_t len);

/* Parses an --env-file's text as `docker run --env-file` does: one entry a
 * line, KEY=VALUE or KEY, lines starting with '#' and blank lines ignored,
 * the value byte for byte (no quotes removed, no trailing space trimmed, a
 * CR before the newline kept).  A bad line is one error naming NAME:LINE. */
int envctl_file_parse(const char *text, size_t len, const char *name, struct strv *out,
		      struct err *e);

/* Reads FILE (a regular file, at most ENVFILE_MAX bytes) and parses it. */
int envctl_file_load(const char *path, struct strv *out, struct err *e);

/* Under --clean-env, whether a variable of ctrun's environment reaches the
 * workers: Slurm's SLURM_*, the terminal type TERM, and the identity
 * (HOME, USER, LOGNAME: see Identity in docs/containers.md). */
bool envctl_clean_keep(const char *kv);

/* The host's values of the KEY entries of `entries` (no '='): KEY=VALUE
 * pushed to `out` for each KEY that `host` has, in order. */
int envctl_host_values(char *const *entries, char *const *host, struct strv *out);

#endif
