/* holderwire.c - what the ctruns of a node and their image holder
 * (holder.c) say to each other, and the share's lock and its cleanup.
 *
 * The holder hands out its mount and user namespaces and the mounted
 * image's directory as descriptors (SCM_RIGHTS), never a pid: a pid can be
 * reused once the holder is gone, and /proc/PID/ns or /proc/PID/root of
 * the new process would put a root client into namespaces (or an image)
 * that are not the holder's.  A descriptor names the namespace itself. */
#include "holder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

void holder_init(struct img_holder *h)
{
	h->pid = -1;
	h->fd = -1;
	h->root = -1;
	h->mnt = -1;
	h->user = -1;
	h->client = false;
}

int holder_msg_send(int sock, const char *dir, const int *fds, size_t nfds)
{
	union {
		char buf[CMSG_SPACE(HOLDER_MSG_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	char text[PATH_MAX + 1];
	int len = snprintf(text, sizeof(text), "%s\n", dir);
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (len < 0 || (size_t)len >= sizeof(text) || nfds > HOLDER_MSG_FDS) {
		errno = ENAMETOOLONG;
		return -1;
	}
	iov = (struct iovec){ .iov_base = text, .iov_len = (size_t)len };
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static bool is_ns(int fd, int type)
{
	return ioctl(fd, NS_GET_NSTYPE) == type;
}

int holder_msg_recv(int sock, bool rootless, struct img_holder *h, char *text, size_t size)
{
	union {
		char buf[CMSG_SPACE(HOLDER_MSG_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	int fds[HOLDER_MSG_FDS];
	size_t nfds = 0, want = rootless ? 3 : 2;
	char buf[PATH_MAX + 1];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct stat st;
	ssize_t n;
	int rv = -1;

	if (size > 0)
		text[0] = '\0';
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < HOLDER_MSG_FDS)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	buf[n] = '\0';
	if (xsnprintf(text, size, "%s", buf) < 0)
		goto out;
	/* "DIR\n" with exactly the root, mount and (rootless) user namespace
	 * descriptors: anything else (an older holder's bare "PID DIR") is
	 * not a holder we can trust to be the one it claims. */
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || nfds != want || buf[0] != '/' ||
	    n < 2 || buf[n - 1] != '\n' || memchr(buf, '\n', (size_t)n - 1) != NULL ||
	    fstat(fds[0], &st) < 0 || !S_ISDIR(st.st_mode) || !is_ns(fds[1], CLONE_NEWNS) ||
	    (rootless && !is_ns(fds[2], CLONE_NEWUSER)))
		goto out;
	text[n - 1] = '\0';
	h->root = fds[0];
	h->mnt = fds[1];
	h->user = rootless ? fds[2] : -1;
	nfds = 0;
	rv = 0;
out:
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	return rv;
}

int holder_join(int mnt, int user, struct err *e)
{
	/* The user namespace first: in it we may join its mount namespace. */
	if (user >= 0 && setns(user, CLONE_NEWUSER) < 0)
		return err_sys(e, EXIT_CTRUN, "joining the image holder's user namespace");
	if (setns(mnt, CLONE_NEWNS) < 0)
		return err_sys(e, EXIT_CTRUN, "joining the image holder's mnt namespace");
	return 0;
}

int holder_share_lock(const char *path, bool wait)
{
	for (;;) {
		struct stat fst, pst;
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600), r;

		if (fd < 0)
			return -1;
		while ((r = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
			;
		/* Whoever held it may have removed the file (the last holder, or
		 * the gc of a dead one's): a lock on a name nobody else can open
		 * any more is no lock, so take the one the path names now. */
		if (r == 0 && fstat(fd, &fst) == 0 && lstat(path, &pst) == 0 &&
		    fst.st_dev == pst.st_dev && fst.st_ino == pst.st_ino)
			return fd;
		close(fd);
		if (r < 0)
			return -1;
	}
}

int holder_share_paths(const char *share, struct sockaddr_un *sa, char *lock, size_t size)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (xsnprintf(sa->sun_path, sizeof(sa->sun_path), "%s.sock", share) < 0 ||
	    xsnprintf(lock, size, "%s.lock", share) < 0)
		return -1;
	return 0;
}

bool holder_share_gc(const char *share)
{
	struct sockaddr_un sa;
	char lock[PATH_MAX];
	struct stat st;
	bool gone = false;
	int lfd, s;

	if (holder_share_paths(share, &sa, lock, sizeof(lock)) < 0 ||
	    (lstat(lock, &st) < 0 && lstat(sa.sun_path, &st) < 0))
		return false;
	/* Busy: a ctrun is starting or meeting the holder right now. */
	lfd = holder_share_lock(lock, false);
	if (lfd < 0)
		return false;
	/* Under the lock nobody binds or unlinks the socket: refused (or no
	 * socket) means no holder listens there, and none can start meanwhile. */
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    (errno == ECONNREFUSED || errno == ENOENT)) {
		if (unlink(sa.sun_path) < 0 && errno != ENOENT)
			goto out;
		/* Removed while locked: a ctrun waiting on this file finds the
		 * name gone (holder_share_lock) and starts over. */
		gone = unlink(lock) == 0;
	}
out:
	if (s >= 0)
		close(s);
	close(lfd);
	return gone;
}
