/* userns.c - the user namespaces of a rootless container: the caller as
 * themselves, and within that the caller as root (see userns.h). */
#include "userns.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int rv;

	if (fd < 0)
		return -1;
	rv = write_all(fd, text, strlen(text));
	if (close(fd) < 0)
		rv = -1;
	return rv;
}

/* A user namespace (flags: and others) whose INSIDE ids are uid and gid
 * of the namespace we were in. */
static int map_one(int flags, unsigned inside_uid, unsigned inside_gid, uid_t uid, gid_t gid,
		   struct err *e)
{
	char map[64];

	if (unshare(CLONE_NEWUSER | flags) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: cannot create a user namespace "
			       "(unprivileged user namespaces disabled?)");
	/* setgroups must be denied before an unprivileged gid_map (a nested
	 * namespace inherits the denial; saying it again is allowed). */
	if (write_file("/proc/self/setgroups", "deny") < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/setgroups");
	snprintf(map, sizeof(map), "%u %u 1\n", inside_uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/uid_map");
	snprintf(map, sizeof(map), "%u %u 1\n", inside_gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/gid_map");
	return 0;
}

int userns_enter(uid_t uid, gid_t gid, struct err *e)
{
	/* The user as themselves first: its child, where the runtime is
	 * root, is then the user's own, and a process of the user in the
	 * host's namespace that joins this one (a SPANK task) has every
	 * capability over the container's namespaces (they belong to the
	 * child) and none over anything else, with its own ids. */
	if (map_one(0, (unsigned)uid, (unsigned)gid, uid, gid, e) < 0)
		return -1;
	return map_one(CLONE_NEWNS, 0, 0, uid, gid, e);
}
