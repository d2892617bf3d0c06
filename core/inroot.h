/* inroot.h - the one resolver of paths inside a root directory: an
 * image's unpacked root file system, a container's root.
 *
 * The root is not trusted: an image carries symlinks such as
 * /dev -> /etc, lib -> ../../../.. or /mnt/x -> /home, and a naive
 * open(ROOT "/dev/nvidia0") follows them onto the host.  Every path here is
 * taken as the container sees it ("/etc/environment" and "etc/environment"
 * are the same) and every symlink is resolved inside the root, with one of
 * two policies:
 *
 *   INROOT_CHROOT   as the kernel would inside the container: an absolute
 *                   link restarts at the root, ".." stops at it (openat2's
 *                   RESOLVE_IN_ROOT; runc's and libnvidia-container's rule).
 *   INROOT_BENEATH  stricter, for code that acts as root on a root it must
 *                   not trust: an absolute link, or a ".." above the root,
 *                   fails with EXDEV (openat2's RESOLVE_BENEATH).
 *   INROOT_NO_LINKS for a path resolved already: any symlink on the way can
 *                   only be a race, and fails with ELOOP (RESOLVE_NO_SYMLINKS).
 *
 * openat2(2) does the work where the kernel has it (Linux 5.6+); on ENOSYS
 * (RHEL 8's 4.18, a seccomp filter) a component walk with O_NOFOLLOW does
 * the same, and it also explains a failure: the error names the link that
 * leaves the root, a loop, a file in the way.  Callers that go on to open,
 * create or mount get a file descriptor, never a path string to walk again;
 * inroot_resolve gives the string only to those that must hand one on (a
 * runtime's mount destination). */
#ifndef CTRUN_INROOT_H
#define CTRUN_INROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

enum inroot_policy { INROOT_CHROOT, INROOT_BENEATH, INROOT_NO_LINKS };

/* openat(2) of `path` inside the directory `rootfd`.  Without O_NOFOLLOW in
 * flags the last component is followed too (inside the root); O_CREAT
 * creates it.  Returns the fd, or -1 with errno (EXDEV: leaves the root
 * under INROOT_BENEATH; ELOOP: over 40 links) and, when e is not NULL, a
 * one-line reason in e (code EXIT_CTRUN; callers wrap it with context). */
int inroot_open(int rootfd, const char *path, int flags, mode_t mode, enum inroot_policy pol,
		struct err *e);

/* The directory that holds path's last component, as an O_PATH fd, and
 * that component's name in leaf (not followed: it may be a symlink or
 * missing).  With `create`, missing directories on the way are made (mode
 * 0755), each in the directory the walk has open.  A path with no last
 * name ("/", "a/..") fails with EINVAL. */
int inroot_parent(int rootfd, const char *path, enum inroot_policy pol, bool create, char *leaf,
		  size_t leaf_size, struct err *e);

/* mkdir -p inside the root: an O_PATH fd of the directory `path`, its
 * missing components made with `mode`. */
int inroot_mkdirs(int rootfd, const char *path, mode_t mode, enum inroot_policy pol,
		  struct err *e);

/* The symlink-free form of `path` relative to the root ("." for the root
 * itself); components that do not exist yet are kept as they are.  The last
 * component is followed only if follow_last. */
int inroot_resolve(int rootfd, const char *path, enum inroot_policy pol, bool follow_last,
		   char *out, size_t size, struct err *e);

/* Tests: false makes inroot_open and inroot_parent use the component walk
 * even where openat2 exists, so both paths run the same cases. */
void inroot_use_openat2(bool on);

#endif
