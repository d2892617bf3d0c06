/* rootfs.h - the container root the hook works in, and paths in it.
 *
 * The hook runs before pivot_root, as root (or as root of the container's
 * user namespace), looking at an image it must not trust: a naive
 * mount("/dev/nvidia0", ROOTFS "/dev/nvidia0") follows an image symlink
 * /dev -> /etc straight onto the host.  So every destination is resolved
 * by core's in-root resolver (inroot.h) with its strict policy: a relative
 * symlink that stays inside the root is followed, an absolute one or a ".."
 * above the root is refused, and the caller gets an fd of the parent
 * directory plus the last name.  Mounts then target /proc/self/fd/N, never
 * a path string, so nothing can be swapped in between the check and the
 * mount. */
#ifndef CTRUN_HOOK_ROOTFS_H
#define CTRUN_HOOK_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct hook_root {
	int fd;           /* O_PATH of the root directory */
	const char *path; /* host path, for messages (borrowed) */
};

int hook_root_open(const char *path, struct hook_root *r, struct err *e);
void hook_root_close(struct hook_root *r);

/* Resolves the directories of `dst` (absolute, as seen inside the
 * container; inroot_parent with INROOT_BENEATH).  Returns 0 with *dirfd (O_PATH, caller closes) and leaf set;
 * 1 when a directory is missing and !create (*dirfd = -1: nothing to check
 * further); -1 with e when the path would leave the root or goes through a
 * non-directory.  create: missing directories are made (mode 0755). */
int hook_root_parent(const struct hook_root *r, const char *dst, bool create, int *dirfd,
		     char *leaf, size_t leaf_size, struct err *e);

/* Whether directory fd `dirfd` (from hook_root_parent) lies on the same
 * mount as the root itself.  A relative link can stay inside the root by
 * its path and still land on a mount the runtime made there: a directory
 * bound from the host (a --mount, the working directory, the home, /tmp),
 * where the hook must not create, replace or mount anything.  -1 with e
 * when it cannot tell (no /proc). */
int hook_root_same_mount(const struct hook_root *r, int dirfd, bool *same, struct err *e);

/* "/proc/self/fd/N" for mount(2)/umount2(2). */
int hook_fd_path(int fd, char *buf, size_t size);

#endif
