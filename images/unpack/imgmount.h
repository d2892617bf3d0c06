/* imgmount.h - an image's squashfs mounted instead of unpacked: a .sqsh, or
 * a SIF's primary partition at its offset, read where it lies.
 *
 *   as root:   a read-only loop device (autoclear: it goes with the last
 *              mount) and the kernel's squashfs, ro,nodev,nosuid;
 *   as a user: squashfuse_ll (FUSE) in a user namespace of the caller's.
 *
 * Both mount into the caller's current mount namespace, which the caller
 * has made private first (runner/container/holder.c): the mount then goes
 * with that namespace, whatever way its processes end. */
#ifndef CTRUN_IMGMOUNT_H
#define CTRUN_IMGMOUNT_H

#include <linux/loop.h>
#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "kind.h"

/* Whether a squashfs lies in images of this kind where they can be
 * mounted (squashfs_region): a squashfs, a SIF's partition. */
bool image_mountable(enum image_kind kind);
/* Whether this process can mount kind the way it would (root: loop devices
 * and the kernel's squashfs; else squashfuse_ll on PATH and /dev/fuse open
 * for reading and writing).  false with *why set to the missing part, one
 * phrase with the fix ("squashfuse_ll is not installed (apt install
 * squashfuse)"). */
bool image_mount_possible(enum image_kind kind, bool root, const char **why);

/* The loop device's view of an image: size bytes from offset (the window
 * squashfs_region gives), read-only, gone with its last user.  The kernel
 * then reads nothing of the file outside it: not the SIF object after the
 * partition.  Pure. */
void image_loop_info(unsigned long long offset, unsigned long long size, struct loop_info64 *info);

/* Root: mounts the squashfs of size bytes at offset of path (squashfs_region)
 * on dir (an empty directory), through a loop device bounded to them. */
int image_mount_kernel(const char *path, unsigned long long offset, unsigned long long size,
		       const char *dir, struct err *e);

/* A user namespace's root: starts squashfuse_ll -f on dir and returns its
 * pid once dir is mounted (it dies with the caller: PDEATHSIG).  -1 with
 * squashfuse_ll's own last words in e when it fails or is not up in 10 s.
 * Not bounded at the end: squashfuse has `-o offset=` and no size option.
 * It runs as the user, on a file the user can read whole anyway, so what
 * it might read past the partition gives nobody anything. */
pid_t image_mount_fuse(const char *path, unsigned long long offset, const char *dir,
		       struct err *e);

#endif
