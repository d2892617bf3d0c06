/* imgconfig.h - an image config's Env, Entrypoint, Cmd and WorkingDir, written into the
 * unpacked root.
 *
 * A docker or OCI image keeps its environment (PATH, LD_LIBRARY_PATH, CUDA
 * variables) in its config JSON, not in its layers.  enroot's import writes
 * `config.Env` as the root's /etc/environment, one KEY=VALUE a line, replacing
 * whatever the layers put there (its generated file is the top overlay layer),
 * and creates `config.WorkingDir`.  ctrun does the same at unpack time, so the
 * runtime adapters read the image's environment where they read it for every
 * other image kind (image_environ_read). */
#ifndef CTRUN_IMGCONFIG_H
#define CTRUN_IMGCONFIG_H

#include <json-c/json.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

struct imgconfig {
	struct strv env; /* config.Env entries to write, KEY=VALUE, in order */
	struct strv entrypoint, cmd; /* config.Entrypoint, config.Cmd */
	char *workdir;   /* config.WorkingDir, NULL when absent or empty */
};

/* Pure: the parsed config JSON `cfg` into c (zeroed first).  An Env entry that
 * is not a string, holds a NUL or a newline (no /etc/environment line can hold
 * it) is refused; one without '=' or whose name is not a shell identifier is
 * left out (enroot's reader and ctrun's drop such lines anyway).  `what`
 * names the config in errors. */
int imgconfig_parse(json_object *cfg, const char *what, struct imgconfig *c, struct err *e);

/* Pure: c->env as /etc/environment text (malloc'd, NUL-terminated, *len
 * bytes).  `KEY=VALUE` as enroot writes it, or `KEY="VALUE"` where the raw
 * form would not read back byte for byte (a value ending in a blank or
 * carriage return, or starting and ending with a quote: readers strip those). */
int imgconfig_environment(const struct imgconfig *c, char **text, size_t *len, struct err *e);

/* Pure: /etc/rc as enroot's import writes it from Entrypoint and Cmd (Cmd
 * /bin/sh when both are empty), for `sh /etc/rc [COMMAND...]`: with a
 * COMMAND, `exec ENTRYPOINT... COMMAND...`, else `exec ENTRYPOINT... CMD...`,
 * every word single-quoted; /etc/rc.local sourced first when not empty.
 * Unlike enroot's it does not cd to WorkingDir: ctrun's working directory
 * (the current one, or --workdir) stands. */
int imgconfig_rc(const struct imgconfig *c, char **text, size_t *len, struct err *e);

/* Writes <root>/etc/environment and <root>/etc/rc (replacing the layers') and creates the
 * working directory, every path resolved inside root (inroot.h): a hostile
 * /etc symlink lands inside the root, never outside. */
int imgconfig_apply(const struct imgconfig *c, const char *root, struct err *e);

void imgconfig_free(struct imgconfig *c);

/* The image's own environment from its /etc/environment (enroot's
 * convention: KEY=VALUE lines, surrounding quotes stripped), into env. */
int image_environ_read(const char *rootfs, struct strv *env, struct err *e);

#endif
