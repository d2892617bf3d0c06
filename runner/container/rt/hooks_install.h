/* hooks_install.h - installing ctrun-hook where runtimes look for hooks:
 * `ctrun hooks install|uninstall NAME [--system] [--dir D] [--hook PATH]`,
 * the install phase of the driver NAME (drivers.h hookfile: its file's
 * name, text and directory are the driver folder's):
 *
 *   enroot  a pre-start hook script, ENROOT_HOOK_FILE, in
 *           $ENROOT_CONFIG_PATH/hooks.d (default
 *           ${XDG_CONFIG_HOME:-$HOME/.config}/enroot/hooks.d), or with
 *           --system ${ENROOT_SYSCONF_PATH:-/etc/enroot}/hooks.d: enroot's
 *           own directories (core/enrootdir.h; empty is unset there too;
 *           rt/enroot/enroothook.c);
 *   oci     a containers/common hooks.d 1.0.0 JSON, OCI_HOOK_FILE, in --dir
 *           or OCI_HOOKS_SYSTEM_DIR (podman, CRI-O; rt/oci/ocihook.c).
 * Files carry a header line and are recognised by their whole content:
 * install is idempotent and never overwrites a file ctrun did not write;
 * uninstall removes exactly what install wrote.
 *
 * The command is runner/cmd_hooks.c. */
#ifndef CTRUN_HOOKS_INSTALL_H
#define CTRUN_HOOKS_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Whether the driver named what has a hook file to install. */
bool hooks_known(const char *what);

/* Whether a path goes into a hook file as it is: absolute, no /../, and
 * only characters that need no quoting in sh or JSON. */
bool hooks_plain_path(const char *p);

/* The hooks.d directory of the driver named what; dir overrides. */
int hooks_dir(const char *what, bool system, const char *dir, char *const *envp, char *buf,
	      size_t size, struct err *e);

/* The file text install writes for a ctrun-hook at hook_path (malloc'd). */
char *hooks_file_text(const char *what, const char *hook_path);

/* Whether text is a file install wrote (for any hook path). */
bool hooks_file_is_ours(const char *what, const char *text);

/* Install into dir: 0 written, 1 already there (same text); -1 with e
 * (a foreign file in the way is EXIT_USAGE).  path gets the file name. */
int hooks_install(const char *what, const char *dir, const char *hook_path, char *path,
		  size_t size, struct err *e);

/* 0 removed, 1 was not installed; -1 with e (a foreign or edited file). */
int hooks_uninstall(const char *what, const char *dir, char *path, size_t size, struct err *e);

/* ctrun-hook next to the running ctrun (build/, or the install's bin/). */
int hooks_default_hook_path(char *buf, size_t size, struct err *e);

#endif
