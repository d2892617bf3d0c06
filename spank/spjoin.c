/* spjoin.c - a task joins the node's container (spjoin.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "holdmsg.h"
#include "rootemu.h"
#include "spjoin.h"

/* Whether fd is the namespace this process is in (/proc/self/ns/NAME). */
static bool is_ours(int fd, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int join(int fd, int type, const char *what, struct err *e)
{
	if (setns(fd, type) < 0)
		return err_sys(e, EXIT_CTRUN, "joining the container's %s namespace", what);
	return 0;
}

int sp_join(const int *fds, const char *cwd, const char *fallback, struct err *e)
{
	static const char *const names[] = HOLD_NS_NAMES;
	static const int types[] = { 0, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS,
				     CLONE_NEWNET, CLONE_NEWCGROUP };
	int mnt = fds[HOLD_FD_MNT], owner;
	bool userns = false;

	if (fds[HOLD_FD_ROOT] < 0 || mnt < 0)
		return err_set(e, EXIT_CTRUN, "no container to join");
	if (!is_ours(mnt, "mnt")) {
		/* Rootless: a mount namespace is joined from the user namespace
		 * that owns it (root there), never from the host's. */
		owner = ioctl(mnt, NS_GET_USERNS);
		if (owner < 0 && errno != EPERM)
			return err_sys(e, EXIT_CTRUN, "the owner of the container's mount namespace");
		if (owner >= 0) {
			bool theirs = !is_ours(owner, "user");
			int rc = theirs ? join(owner, CLONE_NEWUSER, "user", e) : 0;

			userns = theirs;
			close(owner);
			if (rc < 0)
				return -1;
		}
		if (join(mnt, CLONE_NEWNS, "mount", e) < 0)
			return -1;
	}
	for (int i = HOLD_FD_IPC; i < HOLD_NFDS; i++)
		if (fds[i] >= 0 && !is_ours(fds[i], names[i]) && join(fds[i], types[i], names[i], e) < 0)
			return -1;
	/* The container's processes' own identity (a nested namespace under
	 * rootless OCI: the caller as themselves, not root). */
	if (fds[HOLD_FD_USER] >= 0 && !is_ours(fds[HOLD_FD_USER], "user")) {
		if (join(fds[HOLD_FD_USER], CLONE_NEWUSER, "user", e) < 0)
			return -1;
		userns = true;
	}
	/* The container's root emulation (rootemu.h), as enroot's tasks
	 * and pyxis's have it: while the joined namespace's capabilities
	 * last (they end at the command's exec). */
	if (userns && rootemu_install(e) < 0)
		return -1;
	if (fchdir(fds[HOLD_FD_ROOT]) < 0 || chroot(".") < 0)
		return err_sys(e, EXIT_CTRUN, "entering the container's root");
	if (chdir("/") < 0 || (cwd != NULL && chdir(cwd) < 0 &&
			       (fallback == NULL || errno != ENOENT || chdir(fallback) < 0)))
		return err_sys(e, EXIT_CTRUN, "couldn't chdir to %s", cwd != NULL ? cwd : "/");
	return 0;
}
