/* userns.c - a user namespace mapping the caller to root, for the image
 * holder and for the rootless OCI runtime's child (see userns.h). */
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

int userns_enter(uid_t uid, gid_t gid, struct err *e)
{
	char map[64];

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: cannot create a user namespace "
			       "(unprivileged user namespaces disabled?)");
	/* setgroups must be denied before an unprivileged gid_map. */
	if (write_file("/proc/self/setgroups", "deny") < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/setgroups");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/uid_map");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: /proc/self/gid_map");
	return 0;
}
