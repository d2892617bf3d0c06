/* driver.h - the host driver's user-space part a container needs for
 * compute: libraries (libcuda, libnvidia-ml, libnvidia-ptxjitcompiler,
 * libnvidia-nvvm, ...), tools (nvidia-smi, ...) and IPC sockets.
 *
 * Decided like libnvidia-container (NVIDIA/libnvidia-container
 * src/nvc_info.c, nvc_mount.c, nvc_container.c): the compute and utility
 * libraries are found through the host's ld.so.cache and kept only when
 * their real file carries the loaded kernel module's version
 * (libcuda.so.535.104.05 for driver 535.104.05, which drops stubs and CUDA
 * compat copies); each is bound read-only into the image's library
 * directory (/usr/lib/<multiarch> when the image is Debian-like, else
 * /usr/lib64) under its real name, with its soname symlink beside it (and
 * libcuda.so, which programs dlopen), then the image's ld.so.cache is
 * rebuilt.  Tools go to /usr/bin. */
#ifndef CTRUN_HOOK_DRIVER_H
#define CTRUN_HOOK_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "ldcache.h"
#include "plan.h"
#include "rootfs.h"

/* The loaded driver's version ("535.104.05"), or "" when no NVIDIA kernel
 * module is loaded (then any versioned file is accepted). */
void hook_driver_version(char *buf, size_t size);

/* Which of the driver's library names a cache key (soname) belongs to:
 * the name ("libcuda.so"), or NULL. */
const char *hook_driver_lib_name(const char *soname);

/* Whether a library's real file name is the driver's: NAME.VERSION, or
 * with version "" NAME.N.N[.N...]. */
bool hook_driver_file_matches(const char *base, const char *name, const char *version);

/* The image's library directory, as libnvidia-container picks it. */
int hook_driver_libdir(const struct hook_root *r, char *buf, size_t size, struct err *e);

/* Plans libraries (from the cache entries), tools (searched in `path`, a
 * PATH-style list, then the usual bin directories) and IPC sockets.
 * Returns the number of libraries planned, or -1. */
long hook_plan_driver(const struct hook_ldcache_entry *ents, size_t n, const char *version,
		      const char *libdir, const char *path, struct hook_plan *p, struct err *e);

/* The IPC endpoints among `paths` (the daemons' sockets and MPS's pipe
 * directory, hook_plan_driver's list) that exist, as IPC items. */
int hook_plan_ipcs(const char *const *paths, size_t n, struct hook_plan *p, struct err *e);

/* Reads and parses the host's /etc/ld.so.cache.  *buf must outlive the
 * entries (caller frees both). */
int hook_driver_read_ldcache(const char *file, char **buf, struct hook_ldcache_entry **ents,
			     size_t *n, struct err *e);

/* `ctrun-hook driver-files LIBDIR`: one "SRC DST" line per file a runtime
 * that binds files itself (apptainer) needs, libraries under LIBDIR and
 * each soname bound as the library it names. */
int hook_driver_files(const char *libdir, FILE *out, struct err *e);

/* ldconfig.c: rebuilds the image's ld.so.cache with the host's ldconfig
 * (-r ROOT: it chroots itself), scanning libdir besides the image's
 * ld.so.conf, with only CAP_SYS_CHROOT and bounded in time; a failure is
 * reported, not fatal. */
void hook_driver_ldconfig(const char *root, const char *libdir);
/* The same with ldconfig at bin (tests use a stand-in), killed after
 * timeout_s seconds.  0 when it exited 0. */
int hook_ldconfig_run(const char *bin, const char *root, const char *libdir, unsigned timeout_s);

/* Whether the image has the driver's libcuda.so.VERSION (.1 without a
 * version) in libdir already, its links resolved inside the image. */
bool hook_image_has_libcuda(const struct hook_root *r, const char *libdir, const char *version);

#endif
