/* holder.c - the image holder: a child of ctrun whose private mount
 * namespace (and, for a user, user namespace) holds the image's squashfs
 * mounted (images/unpack/imgmount.h), for as long as ctrun runs the container.
 *
 * ctrun reads the mounted image through a descriptor of its directory
 * (/proc/self/fd/N: its environment, mount destinations, the worker's
 * interpreter); the runtime's child joins the holder's namespaces, by
 * descriptor too, before it makes the container's overlay (overlay.c), so
 * the container starts from the mount.  Nothing of it is in
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

#include "unpack/imgmount.h"
#include "unpack/unpack.h"
#include "userns.h"
#include "util.h"

#define HOLDER_CLIENTS 256

/* What the holder hands out, and where: the mounted directory, its
 * descriptors (holder_fds), and the share's socket and name (listen_fd -1
 * without a share). */
struct door {
	int listen_fd;
	const char *share, *dir;
	int fds[HOLDER_MSG_FDS];
	size_t nfds;
};

/* A holder to start: what it mounts, as whom, and the descriptors between
 * it and its starter (the child's ends) and of the share (-1 = none). */
struct launch {
	const struct holder_req *q;
	uid_t uid;
	gid_t gid;
	int status_fd, life_fd, listen_fd, lock_fd;
};

/* A connection answered: the owner's ctruns only (the directory is private too). */
static bool admit(int cfd, const struct door *d)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != getuid() ||
	    holder_msg_send(cfd, d->dir, d->fds, d->nfds) < 0) {
		close(cfd);
		return false;
	}
	return true;
}

/* The end of a share: under its lock, the socket is unlinked (no one can
 * come any more) and the connections made before are taken.  None: the
 * lock file goes too (still locked: holder_share_lock) and the holder
 * ends.  Else it serves those, and ends after them without touching the
 * share again: its names may be a newer holder's by then. */
static int share_end(const struct door *d, int *clients, size_t *n)
{
	struct sockaddr_un sa;
	char lockpath[PATH_MAX];
	int lock, late;

	if (holder_share_paths(d->share, &sa, lockpath, sizeof(lockpath)) < 0 ||
	    (lock = holder_share_lock(lockpath, true)) < 0)
		return -1;
	unlink(sa.sun_path);
	while (*n < HOLDER_CLIENTS &&
	       (late = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (admit(late, d))
			clients[(*n)++] = late;
	}
	if (*n == 0)
		unlink(lockpath);
	close(lock);
	return 0;
}

/* The shared holder's door: the starter's end (EOF on life_fd) and every
 * client's connection.  It returns when the starter is done and no client
 * is left (share_end).  Without a share (listen_fd -1) it waits for
 * life_fd alone. */
static void serve(int life_fd, const struct door *d)
{
	int clients[HOLDER_CLIENTS], listen_fd = d->listen_fd;
	size_t n = 0, polled;
	bool starter = true, ending = false;

	/* accept(2) must never wait: the door may have no one at it. */
	if (listen_fd >= 0)
		fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);

	for (;;) {
		struct pollfd p[HOLDER_CLIENTS + 2];
		size_t np = 0;

		if (!starter && n == 0) {
			if (listen_fd < 0 || ending ||
			    share_end(d, clients, &n) < 0 || n == 0)
				return;
			ending = true;
			continue;
		}
		if (starter)
			p[np++] = (struct pollfd){ .fd = life_fd, .events = POLLIN };
		if (listen_fd >= 0 && !ending)
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
		if (listen_fd >= 0 && !ending && (p[np++].revents & POLLIN)) {
			int cfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0 && n == HOLDER_CLIENTS)
				close(cfd);
			else if (cfd >= 0 && admit(cfd, d))
				clients[n++] = cfd; /* after the poll set was made: looked at next round */
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

/* What the holder hands out: the mounted directory and its namespaces. */
static int holder_fds(struct door *d, bool rootless, struct err *e)
{
	const char *what[] = { d->dir, "/proc/self/ns/mnt", "/proc/self/ns/user" };

	d->nfds = rootless ? 3 : 2;
	for (size_t i = 0; i < d->nfds; i++) {
		d->fds[i] = open(what[i], (i == 0 ? O_PATH | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
		if (d->fds[i] < 0)
			return err_sys(e, EXIT_CTRUN, "image holder: %s", what[i]);
	}
	return 0;
}

/* Mounts the image in namespaces of its own, for the caller (root, or
 * the user mapped to root in a user namespace). */
static int holder_mount(const struct launch *l, pid_t *fuse, struct err *e)
{
	const struct holder_req *q = l->q;
	unsigned long long offset, size;

	if (q->rootless ? userns_enter(l->uid, l->gid, e) : (unshare(CLONE_NEWNS) < 0
							    ? err_sys(e, EXIT_CTRUN, "mount namespace")
							    : 0) < 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_sys(e, EXIT_CTRUN, "making mounts private");
	if (squashfs_region(q->image, q->kind, &offset, &size, e) < 0)
		return -1;
	if (!q->rootless ? image_mount_kernel(q->image, offset, size, q->dir, e)
			 : (*fuse = image_mount_fuse(q->image, offset, q->dir, e)) < 0)
		return -1;
	return 0;
}

__attribute__((noreturn)) static void holder_main(const struct launch *l)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				       SIGURG, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	struct err e = { 0 };
	struct door d = { .listen_fd = l->listen_fd, .share = l->q->share, .dir = l->q->dir };
	pid_t fuse = 0;

	/* ctrun ends it (EOF on life_fd), not a signal meant for the workers:
	 * the mount must outlast the container's stop. */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	if (holder_mount(l, &fuse, &e) < 0 || holder_fds(&d, l->q->rootless, &e) < 0)
		goto fail;
	if (holder_msg_send(l->status_fd, d.dir, d.fds, d.nfds) < 0)
		_exit(1);
	close(l->status_fd);
	serve(l->life_fd, &d);
	if (fuse > 0) {
		kill(fuse, SIGKILL);
		waitpid(fuse, NULL, 0);
	}
	_exit(0);
fail:
	if (write(l->status_fd, e.msg, strlen(e.msg)) < 0)
		_exit(1);
	_exit(1);
}

/* Forks the holder of l (its status and life descriptors are made here)
 * and waits for its word. */
static int start(struct img_holder *h, struct launch *l, struct err *e)
{
	char msg[sizeof(e->msg)];
	int st[2], life[2];
	pid_t self = getpid();

	holder_init(h);
	l->uid = geteuid();
	l->gid = getegid();
	/* The holder's word: its descriptors when it has mounted, else why not. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) < 0)
		return err_sys(e, EXIT_CTRUN, "image holder");
	if (pipe2(life, O_CLOEXEC) < 0) {
		close(st[0]);
		close(st[1]);
		return err_sys(e, EXIT_CTRUN, "image holder");
	}
	l->status_fd = st[1];
	l->life_fd = life[0];
	h->pid = fork();
	if (h->pid == 0) {
		close(st[0]);
		close(life[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(1);
		/* The share's lock is the starter's: a copy here would hold it
		 * (flock belongs to the open file, shared across fork). */
		if (l->lock_fd >= 0)
			close(l->lock_fd);
		holder_main(l);
	}
	close(st[1]);
	close(life[0]);
	if (h->pid < 0) {
		close(st[0]);
		close(life[1]);
		return err_sys(e, EXIT_CTRUN, "image holder: fork");
	}
	h->fd = life[1];
	if (holder_msg_recv(st[0], l->q->rootless, h, msg, sizeof(msg)) == 0) {
		close(st[0]);
		return 0;
	}
	close(st[0]);
	holder_stop(h);
	return err_set(e, EXIT_CTRUN, "%s", msg[0] != '\0' ? msg : "the image holder died");
}

int holder_start(struct img_holder *h, const struct holder_req *q, struct err *e)
{
	struct holder_req own = *q;
	struct launch l = { .q = &own, .listen_fd = -1, .lock_fd = -1 };

	own.share = NULL;
	return start(h, &l, e);
}

/* A client's end: connect to SHARE.sock, the owner's (SO_PEERCRED: the
 * starter's, who listened), and receive the holder's descriptors. */
static int attach(struct img_holder *h, const struct sockaddr_un *sa, bool rootless,
		  char *dir_out, size_t size)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	char dir[PATH_MAX + 1];

	/* dir_out may be our own directory: it must stay as it is on failure. */
	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid() ||
	    poll(&p, 1, 10000) <= 0 || holder_msg_recv(fd, rootless, h, dir, sizeof(dir)) < 0)
		goto fail;
	if (xsnprintf(dir_out, size, "%s", dir) < 0) {
		holder_stop(h);
		goto fail;
	}
	h->pid = -1;
	h->fd = fd;
	h->client = true;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int holder_share(struct img_holder *h, const struct holder_req *q, char *dir_out, size_t size,
		 struct err *e)
{
	struct launch l = { .q = q, .listen_fd = -1, .lock_fd = -1 };
	struct sockaddr_un sa;
	char lockpath[PATH_MAX];
	int rv;

	holder_init(h);
	if (holder_share_paths(q->share, &sa, lockpath, sizeof(lockpath)) < 0 ||
	    (l.lock_fd = holder_share_lock(lockpath, true)) < 0) {
		/* No rendezvous (a path too long for a socket): a holder of our own. */
		if (dir_out != q->dir && xsnprintf(dir_out, size, "%s", q->dir) < 0)
			return err_set(e, EXIT_CTRUN, "image directory path too long");
		return holder_start(h, q, e);
	}
	if (attach(h, &sa, q->rootless, dir_out, size) == 0) {
		close(l.lock_fd); /* releases the lock */
		return 0;
	}
	/* None, or a dead one's socket: ours serves the node from now on. */
	unlink(sa.sun_path);
	l.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (l.listen_fd < 0 || bind(l.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(l.listen_fd, 64) < 0) {
		if (l.listen_fd >= 0)
			close(l.listen_fd);
		l.listen_fd = -1;
	}
	rv = start(h, &l, e);
	if (l.listen_fd >= 0)
		close(l.listen_fd);
	if (rv < 0 && l.listen_fd >= 0)
		unlink(sa.sun_path);
	close(l.lock_fd);
	if (rv == 0 && dir_out != q->dir && xsnprintf(dir_out, size, "%s", q->dir) < 0)
		return err_set(e, EXIT_CTRUN, "image directory path too long");
	return rv;
}

void holder_stop(struct img_holder *h)
{
	if (h->fd >= 0)
		close(h->fd);
	/* Our own holder: it ends once no other task uses it; a client's
	 * holder is another ctrun's child. */
	if (h->pid > 0 && !h->client)
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	/* A descriptor of its namespace would keep the mount alive. */
	for (int *const *fd = (int *const[]){ &h->root, &h->mnt, &h->user, NULL }; *fd; fd++)
		if (**fd >= 0)
			close(**fd);
	holder_init(h);
}
