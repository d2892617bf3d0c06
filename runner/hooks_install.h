/* hooks_install.h - installing ctrun-hook where runtimes look for hooks:
 * `ctrun hooks install|uninstall enroot|oci [--system] [--dir D] [--hook PATH]`
 * and `ctrun hooks configure BUNDLE [--gpus LIST] [--hook PATH]`.
 *
 *   enroot  a pre-start hook script, HOOKS_ENROOT_FILE, in
 *           $ENROOT_CONFIG_PATH/hooks.d (default
 *           ${XDG_CONFIG_HOME:-$HOME/.config}/enroot/hooks.d), or with
 *           --system ${ENROOT_SYSCONF_PATH:-/etc/enroot}/hooks.d: enroot's
 *           own directories (core/enrootdir.h; empty is unset there too);
 *   oci     a containers/common hooks.d 1.0.0 JSON, HOOKS_OCI_FILE, in --dir
 *           or /usr/share/containers/oci/hooks.d (podman, CRI-O).
 * Files carry a header line and are recognised by their whole content:
 * install is idempotent and never overwrites a file ctrun did not write;
 * uninstall removes exactly what install wrote.
 *
 * Beside the command, runner/cmd_hooks.c; the enroot script's text is its
 * driver's (rt/enroot/enroothook.c). */
#ifndef CTRUN_HOOKS_INSTALL_H
#define CTRUN_HOOKS_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* After enroot's 98-nvidia.sh (it may bind every GPU; ours then removes
 * the others). */
#define HOOKS_ENROOT_FILE "99-ctrun-gpus.sh"
#define HOOKS_OCI_FILE "ctrun-hook.json"
#define HOOKS_OCI_SYSTEM_DIR "/usr/share/containers/oci/hooks.d"

/* The hooks.d directory: what = "enroot" or "oci"; dir overrides. */
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
