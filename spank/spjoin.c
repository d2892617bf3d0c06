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

/* More than the kernel's 32 levels of user namespaces. */
#define USERNS_LEVELS 40

/* Whether fd is the namespace this process is in (/proc/self/ns/NAME). */
static bool is_ours(int fd, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static bool same_ns(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int join(int fd, int type, const char *what, struct err *e)
{
	if (setns(fd, type) < 0)
		return err_sys(e, EXIT_CTRUN, "joining the container's %s namespace", what);
	return 0;
}

bool sp_join_hold_user(unsigned depth, bool hold_below_owner)
{
	/* At depth 2 and more the outer namespace maps the user to
	 * themselves above the runtime's (runner/container/userns.h): a
	 * namespace right below the runtime's is how the agent became the
	 * user again, which the task is already there; the runtime's own
	 * (remap-root) is joined.  Above a runtime with no such outer
	 * namespace (enroot, ch-run...) the agent's is the identity. */
	return !(depth >= 2 && hold_below_owner);
}

/* The user namespace that owns the container's mount namespace (*owner)
 * and the one on the way up from it that is a child of ours (*outer),
 * *depth levels below ours (0: the owner is ours, or out of our sight,
 * and both are -1).  -1 with e. */
static int owners(int mnt, int *owner, int *outer, unsigned *depth, struct err *e)
{
	int cur;

	*owner = *outer = -1;
	*depth = 0;
	cur = ioctl(mnt, NS_GET_USERNS);
	if (cur < 0)
		return errno == EPERM ? 0 : err_sys(e, EXIT_CTRUN, "the owner of the container's "
						    "mount namespace");
	if (is_ours(cur, "user")) {
		close(cur);
		return 0;
	}
	*owner = cur;
	for (*depth = 1; *depth <= USERNS_LEVELS; (*depth)++) {
		int parent = ioctl(cur, NS_GET_PARENT);

		if (parent < 0) {
			err_sys(e, EXIT_CTRUN, "the container's user namespace is not below this "
				"task's");
			break;
		}
		if (is_ours(parent, "user")) {
			close(parent);
			*outer = cur;
			return 0;
		}
		if (cur != *owner)
			close(cur);
		cur = parent;
	}
	if (cur != *owner)
		close(cur);
	close(*owner);
	*owner = -1;
	return e->msg[0] != '\0' ? -1 : err_set(e, EXIT_CTRUN, "the container's user namespace "
						 "is too deep");
}

/* Whether the hold's user namespace hold lies right below owner. */
static bool below(int hold, int owner)
{
	int parent = ioctl(hold, NS_GET_PARENT);
	bool yes = parent >= 0 && same_ns(parent, owner);

	if (parent >= 0)
		close(parent);
	return yes;
}

/* The user namespaces that reach the container's mount namespace, and
 * that one (spjoin.h's order).  *joined: whether a user namespace was;
 * *hold: whether the hold's user namespace is still to be joined. */
static int join_user_mnt(const int *fds, bool *joined, bool *hold, struct err *e)
{
	int mnt = fds[HOLD_FD_MNT], user = fds[HOLD_FD_USER], owner, outer, rc;
	unsigned depth;

	*joined = false;
	*hold = user >= 0;
	if (is_ours(mnt, "mnt"))
		return 0;
	/* Rootless: a mount namespace is joined from a user namespace whose
	 * capabilities reach it, never from the host's. */
	if (owners(mnt, &owner, &outer, &depth, e) < 0)
		return -1;
	rc = outer >= 0 ? join(outer, CLONE_NEWUSER, "user", e) : 0;
	*joined = outer >= 0 && rc == 0;
	if (user >= 0 && owner >= 0)
		*hold = sp_join_hold_user(depth, below(user, owner));
	if (outer >= 0 && outer != owner)
		close(outer);
	if (owner >= 0)
		close(owner);
	if (rc < 0)
		return -1;
	return join(mnt, CLONE_NEWNS, "mount", e);
}

int sp_join(const int *fds, const char *cwd, const char *fallback, struct err *e)
{
	static const char *const names[] = HOLD_NS_NAMES;
	static const int types[] = { 0, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS,
				     CLONE_NEWNET, CLONE_NEWCGROUP };
	bool userns = false, hold = false;

	if (fds[HOLD_FD_ROOT] < 0 || fds[HOLD_FD_MNT] < 0)
		return err_set(e, EXIT_CTRUN, "no container to join");
	if (join_user_mnt(fds, &userns, &hold, e) < 0)
		return -1;
	for (int i = HOLD_FD_IPC; i < HOLD_NFDS; i++)
		if (fds[i] >= 0 && !is_ours(fds[i], names[i]) && join(fds[i], types[i], names[i], e) < 0)
			return -1;
	/* The container's processes' own identity where the namespaces
	 * above do not give it (sp_join_hold_user); last, as from it (a
	 * namespace below the others' owner) the others could not be. */
	if (hold && !is_ours(fds[HOLD_FD_USER], "user")) {
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
