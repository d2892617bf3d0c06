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
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imgmount.h"
#include "rt.h"
#include "unpack.h"
#include "util.h"

#define HOLDER_CLIENTS 256

/* The shared holder's door: the starter's end (EOF on life_fd) and every
 * client's connection.  It returns when the starter is done and no client
 * is left; the socket is unlinked under the share's lock first, so a ctrun
 * that comes later starts a holder of its own instead of reaching this one
 * as it goes.  Without a share (listen_fd -1) it waits for life_fd alone. */
static void serve(int life_fd, int listen_fd, const char *share, const char *dir)
{
	int clients[HOLDER_CLIENTS], lock = -1;
	size_t n = 0, polled;
	bool starter = true;
	char reply[PATH_MAX + 32], path[PATH_MAX];
	int len = snprintf(reply, sizeof(reply), "%ld %s\n", (long)getpid(), dir);

	/* accept(2) must never wait: the door may have no one at it. */
	if (listen_fd >= 0)
		fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);

	for (;;) {
		struct pollfd p[HOLDER_CLIENTS + 2];
		size_t np = 0;

		if (!starter && n == 0) {
			int late;

			if (listen_fd < 0)
				return;
			if (lock < 0 && snprintf(path, sizeof(path), "%s.lock", share) < (int)sizeof(path))
				lock = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			if (lock >= 0)
				flock(lock, LOCK_EX);
			if (snprintf(path, sizeof(path), "%s.sock", share) < (int)sizeof(path))
				unlink(path);
			late = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (late < 0) {
				/* Nothing of the share stays; the lock goes with the process
				 * (a ctrun blocked on it finds no socket and starts its own). */
				if (snprintf(path, sizeof(path), "%s.lock", share) < (int)sizeof(path))
					unlink(path);
				return;
			}
			if (write(late, reply, (size_t)len) != len) {
				close(late);
			} else {
				clients[n++] = late;
			}
			if (lock >= 0)
				flock(lock, LOCK_UN);
			continue;
		}
		if (starter)
			p[np++] = (struct pollfd){ .fd = life_fd, .events = POLLIN };
		if (listen_fd >= 0)
			p[np++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (size_t i = 0; i < n; i++)
			p[np++] = (struct pollfd){ .fd = clients[i], .events = POLLIN };
		polled = n;
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		np = 0;
		if (starter && p[np++].revents != 0) {
			char c;
			ssize_t r = read(life_fd, &c, 1);

			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
				starter = false;
		}
		if (listen_fd >= 0 && (p[np++].revents & POLLIN)) {
			int cfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
			struct ucred cr;
			socklen_t cl = sizeof(cr);

			/* Only the owner's ctruns (the directory is private too). */
			if (cfd >= 0 && (n == HOLDER_CLIENTS ||
					 getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
					 cr.uid != getuid() || write(cfd, reply, (size_t)len) != len)) {
				close(cfd);
			} else if (cfd >= 0) {
				/* After the poll set was made: looked at next round. */
				clients[n++] = cfd;
			}
		}
		/* Downwards, so the last client moved into a gone one's place has
		 * been looked at already (p[np + i] is clients[i] of this round). */
		for (size_t i = polled; i-- > 0;) {
			char buf[16];

			if (p[np + i].revents != 0 && read(clients[i], buf, sizeof(buf)) <= 0) {
				close(clients[i]);
				clients[i] = clients[--n];
			}
		}
	}
}

__attribute__((noreturn)) static void holder_main(const char *image, enum image_kind kind,
						  const char *dir, bool rootless, uid_t uid,
						  gid_t gid, int status_fd, int life_fd, int listen_fd,
						  const char *share)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				       SIGURG, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	struct err e = { 0 };
	unsigned long long offset, size;
	pid_t fuse = 0;

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
	if (!rootless ? image_mount_kernel(image, offset, size, dir, &e)
		      : (fuse = image_mount_fuse(image, offset, dir, &e)) < 0)
		goto fail;
	if (write(status_fd, "ok", 2) != 2)
		_exit(1);
	close(status_fd);
	serve(life_fd, listen_fd, share, dir);
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

static int start(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, int listen_fd, const char *share, int lock_fd, struct err *e)
{
	char msg[sizeof(e->msg)];
	int st[2], life[2];
	pid_t self = getpid();
	uid_t uid = geteuid();
	gid_t gid = getegid();
	ssize_t n;

	h->pid = -1;
	h->fd = -1;
	h->client = false;
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
		/* The share's lock is the starter's: a copy here would hold it
		 * (flock belongs to the open file, shared across fork). */
		if (lock_fd >= 0)
			close(lock_fd);
		holder_main(image, kind, dir, rootless, uid, gid, st[1], life[0], listen_fd, share);
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

int holder_start(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, struct err *e)
{
	return start(h, image, kind, dir, rootless, -1, NULL, -1, e);
}

/* A client's end: connect to SHARE.sock and read "PID DIR\n". */
static int attach(struct img_holder *h, const struct sockaddr_un *sa, char *dir_out, size_t size)
{
	char buf[PATH_MAX + 32], *sp, *end;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t got = 0, r;
	long pid;

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		goto fail;
	while (got < (ssize_t)sizeof(buf) - 1 && memchr(buf, '\n', (size_t)got) == NULL) {
		if (poll(&p, 1, 10000) <= 0)
			goto fail;
		r = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got);
		if (r <= 0)
			goto fail;
		got += r;
	}
	buf[got] = '\0';
	pid = strtol(buf, &sp, 10);
	if (pid <= 0 || *sp != ' ' || (end = strchr(sp + 1, '\n')) == NULL || end[1] != '\0' ||
	    xsnprintf(dir_out, size, "%.*s", (int)(end - sp - 1), sp + 1) < 0)
		goto fail;
	h->pid = (pid_t)pid;
	h->fd = fd;
	h->client = true;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int holder_share(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, const char *share, char *dir_out, size_t size, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char lockpath[PATH_MAX];
	int lock, lfd = -1, rv;

	h->pid = -1;
	h->fd = -1;
	h->client = false;
	if (xsnprintf(sa.sun_path, sizeof(sa.sun_path), "%s.sock", share) < 0 ||
	    xsnprintf(lockpath, sizeof(lockpath), "%s.lock", share) < 0 ||
	    (lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		/* No rendezvous (a path too long for a socket): a holder of our own. */
		if (dir_out != dir && xsnprintf(dir_out, size, "%s", dir) < 0)
			return err_set(e, EXIT_CTRUN, "image directory path too long");
		return start(h, image, kind, dir, rootless, -1, NULL, -1, e);
	}
	while (flock(lock, LOCK_EX) < 0 && errno == EINTR)
		;
	if (attach(h, &sa, dir_out, size) == 0) {
		close(lock); /* releases the lock */
		return 0;
	}
	/* None, or a dead one's socket: ours serves the node from now on. */
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0) {
		if (lfd >= 0)
			close(lfd);
		lfd = -1;
	}
	rv = start(h, image, kind, dir, rootless, lfd, share, lock, e);
	if (lfd >= 0)
		close(lfd);
	if (rv < 0 && lfd >= 0)
		unlink(sa.sun_path);
	close(lock);
	if (rv == 0 && dir_out != dir && xsnprintf(dir_out, size, "%s", dir) < 0)
		return err_set(e, EXIT_CTRUN, "image directory path too long");
	return rv;
}

void holder_stop(struct img_holder *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	/* Our own holder: it ends once no other task uses it; a client's
	 * holder is another ctrun's child. */
	if (h->pid > 0 && !h->client)
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	h->pid = -1;
	h->client = false;
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

