/* imgmount.c - a squashfs mounted where it lies (see imgmount.h). */
#include "imgmount.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define FUSE_UP_MS 10000

static bool kernel_has(const char *fs)
{
	char line[128];
	FILE *f = fopen("/proc/filesystems", "re");
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *name = strrchr(line, '\t');

		name = name != NULL ? name + 1 : line;
		name[strcspn(name, "\n")] = '\0';
		found = strcmp(name, fs) == 0;
	}
	fclose(f);
	return found;
}

static bool on_path(const char *prog)
{
	char path[PATH_MAX];
	const char *p = getenv("PATH");

	for (p = p != NULL ? p : "/usr/bin:/bin"; *p != '\0';) {
		size_t n = strcspn(p, ":");

		if (n > 0 && xsnprintf(path, sizeof(path), "%.*s/%s", (int)n, p, prog) >= 0 &&
		    access(path, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

bool image_mountable(enum image_kind kind)
{
	return kind == IMAGE_SQUASHFS || kind == IMAGE_SIF;
}

bool image_mount_possible(enum image_kind kind, bool root, const char **why)
{
	int fd;

	if (!image_mountable(kind)) {
		*why = "only a squashfs or a SIF can be mounted";
		return false;
	}
	if (root) {
		if (!kernel_has("squashfs")) {
			*why = "the kernel has no squashfs (modprobe squashfs)";
			return false;
		}
		if (access("/dev/loop-control", W_OK) != 0) {
			*why = "no /dev/loop-control (modprobe loop)";
			return false;
		}
		return true;
	}
	if (!on_path("squashfuse_ll")) {
		*why = "squashfuse_ll is not installed (apt install squashfuse)";
		return false;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		*why = "/dev/fuse cannot be opened (it should be mode 0666)";
		return false;
	}
	close(fd);
	return true;
}

/* /dev/loopN, made if the node's /dev lacks it (a private /dev). */
static int open_loop(int n, struct err *e)
{
	char dev[32];
	int fd;

	snprintf(dev, sizeof(dev), "/dev/loop%d", n);
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT &&
	    (mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned)n)) == 0 || errno == EEXIST))
		fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err_sys(e, EXIT_CTRUN, "%s", dev);
	return fd;
}

void image_loop_info(unsigned long long offset, unsigned long long size, struct loop_info64 *info)
{
	memset(info, 0, sizeof(*info));
	info->lo_offset = offset;
	info->lo_sizelimit = size;
	info->lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY;
}

/* Binds the image's window offset..offset+limit to a free loop device,
 * read-only, to be released with its last user.  Returns the device's
 * descriptor. */
static int attach_loop(int img, const struct loop_info64 *info, char *dev, size_t size,
		       struct err *e)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), loop = -1;

	if (ctl < 0)
		return err_sys(e, EXIT_CTRUN, "/dev/loop-control");
	/* Another process may take the free device between the two calls. */
	for (int tries = 0; tries < 32; tries++) {
		struct loop_config cfg = { .fd = (unsigned)img, .info = *info };
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (n < 0) {
			err_sys(e, EXIT_CTRUN, "no free loop device");
			break;
		}
		loop = open_loop(n, e);
		if (loop < 0)
			break;
		if (ioctl(loop, LOOP_CONFIGURE, &cfg) == 0) {
			snprintf(dev, size, "/dev/loop%d", n);
			close(ctl);
			return loop;
		}
		/* Before Linux 5.8 (RHEL 8): the two-step form. */
		if ((errno == EINVAL || errno == ENOTTY) && ioctl(loop, LOOP_SET_FD, img) == 0) {
			/* READ_ONLY is LOOP_SET_FD's own (the descriptor is
			 * read-only); SET_STATUS64 refuses to change it. */
			struct loop_info64 st = *info;

			st.lo_flags &= ~(unsigned)LO_FLAGS_READ_ONLY;
			if (ioctl(loop, LOOP_SET_STATUS64, &st) == 0) {
				snprintf(dev, size, "/dev/loop%d", n);
				close(ctl);
				return loop;
			}
			err_sys(e, EXIT_CTRUN, "loop device %d", n);
			ioctl(loop, LOOP_CLR_FD, 0);
			break;
		}
		if (errno != EBUSY) {
			err_sys(e, EXIT_CTRUN, "loop device %d", n);
			break;
		}
		close(loop);
		loop = -1;
	}
	if (loop >= 0)
		close(loop);
	close(ctl);
	return -1;
}

int image_mount_kernel(const char *path, unsigned long long offset, unsigned long long size,
		       const char *dir, struct err *e)
{
	struct loop_info64 info;
	char dev[32];
	int img = open_regular(path, O_RDONLY, NULL), loop, rv = 0;

	if (img < 0)
		return errno == EINVAL ? err_set(e, EXIT_CTRUN, "image %s: not a regular file", path)
				       : err_sys(e, EXIT_CTRUN, "image %s", path);
	if (size == 0) {
		close(img);
		return err_set(e, EXIT_CTRUN, "image %s: no size for its squashfs", path);
	}
	image_loop_info(offset, size, &info);
	loop = attach_loop(img, &info, dev, sizeof(dev), e);
	close(img);
	if (loop < 0)
		return err_wrap(e, "mounting %s", path);
	if (mount(dev, dir, "squashfs", MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0)
		rv = err_sys(e, EXIT_CTRUN, "mounting %s (%s) on %s", path, dev, dir);
	close(loop); /* autoclear: the mount holds the device now, or nothing does */
	return rv;
}

static bool mounted(const char *dir)
{
	char parent[PATH_MAX];
	struct stat a, b;

	if (xsnprintf(parent, sizeof(parent), "%s/..", dir) < 0 || stat(dir, &a) < 0 ||
	    stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev;
}

pid_t image_mount_fuse(const char *path, unsigned long long offset, const char *dir,
		       struct err *e)
{
	char opts[64], tail[512] = "";
	size_t len = 0;
	int out[2], status;
	pid_t pid, self = getpid();

	if (path[0] != '/' || dir[0] != '/')
		return err_set(e, EXIT_CTRUN, "squashfuse_ll: %s and %s must be absolute", path, dir);
	snprintf(opts, sizeof(opts), "ro,offset=%llu", offset);
	if (pipe2(out, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "squashfuse_ll");
	pid = fork();
	if (pid < 0) {
		close(out[0]);
		close(out[1]);
		return err_sys(e, EXIT_CTRUN, "squashfuse_ll");
	}
	if (pid == 0) {
		/* No "--" (libfuse's parser takes it for an option): both paths
		 * are absolute, so neither reads as one. */
		char *argv[] = { "squashfuse_ll", "-f", "-o", opts, (char *)path, (char *)dir, NULL };
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(126);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		dup2(out[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	for (int waited = 0; waited < FUSE_UP_MS; waited += 10) {
		struct pollfd pfd = { .fd = out[0], .events = POLLIN };
		ssize_t n;

		if (mounted(dir)) {
			close(out[0]);
			return pid;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		if (poll(&pfd, 1, 10) > 0 &&
		    (n = read(out[0], tail + len, sizeof(tail) - 1 - len)) > 0)
			len += (size_t)n;
	}
	while (len < sizeof(tail) - 1) {
		ssize_t n = read(out[0], tail + len, sizeof(tail) - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(out[0]);
	tail[len] = '\0';
	while (len > 0 && (tail[len - 1] == '\n' || tail[len - 1] == ' '))
		tail[--len] = '\0';
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return err_set(e, EXIT_CTRUN, "squashfuse_ll did not mount %s within %d s%s%s", path,
			       FUSE_UP_MS / 1000, len ? ": " : "", tail);
	}
	return err_set(e, EXIT_CTRUN, "squashfuse_ll could not mount %s: %s", path,
		       len ? tail : "it exited without a word");
}
