/* enrootdir.h - where enroot reads its configuration (environ.d, mounts.d,
 * hooks.d, enroot.conf), by enroot's own rule, for ctrun's enroot adapter
 * (runner/container/gpus.c) and `ctrun hooks install enroot`:
 *
 *   system  $ENROOT_SYSCONF_PATH, else /etc/enroot;
 *   user    $ENROOT_CONFIG_PATH, else $XDG_CONFIG_HOME/enroot, else
 *           $HOME/.config/enroot.
 *
 * enroot sets each default with config::export, `${VAR:-default}`
 * (NVIDIA/enroot enroot.in at 8ea147d, lines 27-29 and 73-81), so a variable that is
 * set but EMPTY takes the default exactly as an unset one does:
 * ENROOT_SYSCONF_PATH= means /etc/enroot, never "/hooks.d" at the root.
 * /etc/enroot is the sysconfdir of enroot's packages (its Makefile's own
 * default is PREFIX/etc/enroot) and the path its docs name.
 * (enroot falls back to the passwd entry's home when HOME is unset or
 * empty; ctrun then has no user directory: see enroot_config_path.) */
#ifndef CTRUN_ENROOTDIR_H
#define CTRUN_ENROOTDIR_H

#include <stddef.h>

#define ENROOT_SYSCONF_DEFAULT "/etc/enroot"

/* The system configuration directory into buf; -1 with errno
 * ENAMETOOLONG (buf is then ""). */
int enroot_sysconf_path(char *const *envp, char *buf, size_t size);

/* The user's configuration directory into buf; -1 with errno ENOENT when
 * none of ENROOT_CONFIG_PATH, XDG_CONFIG_HOME, HOME is set and non-empty
 * (buf is then ""), ENAMETOOLONG when it does not fit. */
int enroot_config_path(char *const *envp, char *buf, size_t size);

#endif
