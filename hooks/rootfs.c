/* rootfs.c - the container root the hook works in (see rootfs.h). */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inroot.h"
#include "util.h"

int hook_fd_path(int fd, char *buf, size_t size)
{
	return xsnprintf(buf, size, "/proc/self/fd/%d", fd) < 0 ? -1 : 0;
}

int hook_root_open(const char *path, struct hook_root *r, struct err *e)
{
	struct stat st, host;

	r->path = path;
	r->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->fd < 0)
		return err_sys(e, EXIT_USAGE, "container root %s", path);
	if (fstat(r->fd, &st) < 0) {
		err_sys(e, EXIT_USAGE, "container root %s", path);
		hook_root_close(r);
		return -1;
	}
	/* The root itself must not be the host's "/": the hook would then bind
	 * into the host it is meant to protect. */
	if (stat("/", &host) == 0 && host.st_dev == st.st_dev && host.st_ino == st.st_ino) {
		hook_root_close(r);
		return err_set(e, EXIT_USAGE, "container root is the host's /");
	}
	return 0;
}

void hook_root_close(struct hook_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* The mount id of fd, from /proc/self/fdinfo (every kernel since 3.15;
 * statx's STATX_MNT_ID needs 5.8). */
static long mount_id(int fd)
{
	char path[64], buf[512], *p;
	ssize_t n;
	long id = -1;
	int info;

	if (xsnprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd) < 0)
		return -1;
	info = open(path, O_RDONLY | O_CLOEXEC);
	if (info < 0)
		return -1;
	n = read(info, buf, sizeof(buf) - 1);
	close(info);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nmnt_id:");
	if (p != NULL && sscanf(p + 8, "%ld", &id) != 1)
		id = -1;
	return id;
}

int hook_root_same_mount(const struct hook_root *r, int dirfd, bool *same, struct err *e)
{
	long a = mount_id(r->fd), b = mount_id(dirfd);

	if (a < 0 || b < 0)
		return err_set(e, EXIT_CTRUN, "cannot read the mount of a directory in the container "
			       "(/proc/self/fdinfo)");
	*same = a == b;
	return 0;
}

int hook_root_parent(const struct hook_root *r, const char *dst, bool create, int *dirfd,
		     char *leaf, size_t leaf_size, struct err *e)
{
	if (dst[0] != '/')
		return err_set(e, EXIT_CTRUN, "destination '%s' is not an absolute path", dst);
	*dirfd = inroot_parent(r->fd, dst, INROOT_BENEATH, create, leaf, leaf_size, e);
	if (*dirfd >= 0)
		return 0;
	if (errno == ENOENT && !create) {
		*e = (struct err){ 0 };
		return 1;
	}
	if (errno == EINVAL)
		return err_set(e, EXIT_CTRUN, "destination '%s' has no file name", dst);
	return -1;
}
