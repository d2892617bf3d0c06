/* enrootstock.h - what enroot's start of an image adds to a container
 * beyond what its own releases install, as pure functions of the bytes:
 * --runtime auto reads them to tell whether ctrun's own start (the oci
 * driver over the mounted image) gives the same container as enroot
 * (runner/container/enrootcfg.c reads the files; docs/decisions/
 * runtimes.md, issue 33).
 *
 * enroot configures every container from (NVIDIA/enroot runtime.sh and the
 * enroot script):
 *   hooks.d/NAME.sh      executable scripts run at each start
 *   mounts.d/NAME.fstab  fstab lines mounted at each start
 *   environ.d/NAME.env   environment lines added at each start
 * in its system directory and the user's, and from enroot.conf and
 * enroot.conf.d/NAME.conf and its own environment (ENROOT_*, MELLANOX_*,
 * NVIDIA_* settings).  Its releases install the same few files in those
 * directories, whose effects ctrun's own start gives itself (the user and
 * home, GPUs through ctrun-hook, /etc/hosts...); anything else is the
 * site's or the user's, which only enroot applies. */
#ifndef CTRUN_ENROOTSTOCK_H
#define CTRUN_ENROOTSTOCK_H

#include <stdbool.h>
#include <stddef.h>

/* Whether enroot reads the file `name` of its configuration directory
 * `dir` ("hooks.d": NAME.sh, run when executable; "mounts.d": NAME.fstab;
 * "environ.d": NAME.env); every other name there is ignored by enroot. */
bool enroot_cfg_read(const char *dir, const char *name);

/* Whether the file is one of enroot's own, byte for byte as a release
 * installs it (v3.0.0 to v4.1.2, and master at 8ea147d): its directory,
 * name and the SHA-256 of its bytes. */
bool enroot_stock_file(const char *dir, const char *name, const char *data, size_t len);
/* The same from the SHA-256 (lower-case hex). */
bool enroot_stock_digest(const char *dir, const char *name, const char *sha256);

/* enroot.conf (or enroot.conf.d/NAME.conf) text, read as enroot's
 * config::load reads it: the first setting that changes what a container
 * gets, its name into key; false when none does (comments, and settings of
 * paths, downloads and squashing, or a false value). */
bool enroot_conf_adds(const char *text, char *key, size_t size);

/* The same for the environment enroot starts with (ctrun's): the first
 * variable that changes a container; the paths (ENROOT_SYSCONF_PATH,
 * ENROOT_CONFIG_PATH: the directories read) and what ctrun sets or removes
 * for each run (ENROOT_MOUNT_HOME, ENROOT_LOGIN_SHELL, ENROOT_REMAP_ROOT,
 * NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES) do not count. */
bool enroot_env_adds(char *const *envp, char *key, size_t size);

/* The enroot script's text (the `enroot` on PATH is a bash script): the
 * enroot.conf it reads (`config::init "PATH"`) into conf and its default
 * system directory (`config::export ENROOT_SYSCONF_PATH "PATH"`) into
 * sysconf.  -1 when either line is missing or its path does not fit. */
int enroot_script_paths(const char *text, char *conf, size_t csize, char *sysconf,
			size_t ssize);

#endif
