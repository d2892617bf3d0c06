/* holder.c - the image holder: a child of ctrun whose private mount
 * namespace (and, for a user, user namespace) holds the image's squashfs
 * mounted (images/imgmount.h), for as long as ctrun runs the container.
 *
 * ctrun reads the mounted image through /proc/PID/root (its environment,
 * mount destinations, the worker's interpreter); the runtime's child joins
 * the holder's namespaces before it makes the container's overlay
 * (ocins.c), so the container starts from the mount.  Nothing of it is in
 * ctrun's own namespace: when the holder and the container are gone (ctrun
 * closes the holder's pipe; PDEATHSIG after a kill -9), the mount goes with
 * the namespace, the loop device with the mount (autoclear), the FUSE
 * daemon with the holder. */
#include "holder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imgmount.h"
#include "rt.h"
#include "unpack.h"
#include "util.h"

__attribute__((noreturn)) static void holder_main(const char *image, enum image_kind kind,
						  const char *dir, bool rootless, uid_t uid,
						  gid_t gid, int status_fd, int life_fd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				       SIGURG, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	struct err e = { 0 };
	unsigned long long offset, size;
	pid_t fuse = 0;
	char c;

	/* ctrun ends it (EOF on life_fd), not a signal meant for the workers:
	 * the mount must outlast the container's stop. */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	if (rootless ? ocins_userns(uid, gid, &e) : (unshare(CLONE_NEWNS) < 0
						     ? err_sys(&e, EXIT_CTRUN, "mount namespace")
						     : 0) < 0)
		goto fail;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		err_sys(&e, EXIT_CTRUN, "making mounts private");
		goto fail;
	}
	if (squashfs_region(image, kind, &offset, &size, &e) < 0)
		goto fail;
	if (!rootless ? image_mount_kernel(image, offset, dir, &e)
		      : (fuse = image_mount_fuse(image, offset, dir, &e)) < 0)
		goto fail;
	if (write(status_fd, "ok", 2) != 2)
		_exit(1);
	close(status_fd);
	while (read(life_fd, &c, 1) < 0 && errno == EINTR)
		;
	if (fuse > 0) {
		kill(fuse, SIGKILL);
		waitpid(fuse, NULL, 0);
	}
	_exit(0);
fail:
	if (write(status_fd, e.msg, strlen(e.msg)) < 0)
		_exit(1);
	_exit(1);
}

int holder_start(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, struct err *e)
{
	char msg[sizeof(e->msg)];
	int st[2], life[2];
	pid_t self = getpid();
	uid_t uid = geteuid();
	gid_t gid = getegid();
	ssize_t n;

	h->pid = -1;
	h->fd = -1;
	if (pipe2(st, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "image holder");
	if (pipe2(life, O_CLOEXEC) < 0) {
		close(st[0]);
		close(st[1]);
		return err_sys(e, EXIT_CTRUN, "image holder");
	}
	h->pid = fork();
	if (h->pid == 0) {
		close(st[0]);
		close(life[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(1);
		holder_main(image, kind, dir, rootless, uid, gid, st[1], life[0]);
	}
	close(st[1]);
	close(life[0]);
	if (h->pid < 0) {
		close(st[0]);
		close(life[1]);
		return err_sys(e, EXIT_CTRUN, "image holder: fork");
	}
	h->fd = life[1];
	do
		n = read(st[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(st[0]);
	if (n == 2 && memcmp(msg, "ok", 2) == 0)
		return 0;
	msg[n > 0 ? n : 0] = '\0';
	holder_stop(h);
	return err_set(e, EXIT_CTRUN, "%s", n > 0 ? msg : "the image holder died");
}

void holder_stop(struct img_holder *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	if (h->pid > 0)
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	h->pid = -1;
}

int holder_join(pid_t pid, bool rootless, struct err *e)
{
	static const struct { const char *name; int type; } ns[] = {
		{ "user", CLONE_NEWUSER }, { "mnt", CLONE_NEWNS },
	};
	char path[64];

	for (size_t i = rootless ? 0 : 1; i < sizeof(ns) / sizeof(*ns); i++) {
		int fd;

		snprintf(path, sizeof(path), "/proc/%ld/ns/%s", (long)pid, ns[i].name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, ns[i].type) < 0) {
			err_sys(e, EXIT_CTRUN, "joining the image holder's %s namespace", ns[i].name);
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

