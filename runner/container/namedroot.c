/* namedroot.c - one mounted root per named container, shared by the runs
 * that use it at once (see namedroot.h): the door's server, joining a
 * root or mounting it, and a mount of it that outlived its run. */
#include "namedroot.h"

#include <dirent.h>
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
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "holder.h"
#include "runtime.h"
#include "userns.h"
#include "util.h"

/* How long a run waits for the processes of a killed run of the same
 * container to end (their mount of its overlay with them), and for a
 * door to answer. */
#define LINGER_WAIT_MS 30000
#define DOOR_WAIT_MS 10000
/* A process's mountinfo is read up to this size. */
#define MOUNTINFO_MAX (4u << 20)

void named_root_init(struct named_root *r)
{
	r->server = -1;
	r->ctl = r->tree = r->user = -1;
}

bool named_mountinfo_has(const char *text, size_t len, const char *tag)
{
	size_t tl = strlen(tag);
	const char *end = text + len;

	/* "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER" */
	for (const char *line = text; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *stop = nl != NULL ? nl : end, *p;

		p = memmem(line, (size_t)(stop - line), " - ", 3);
		if (p != NULL) {
			p += 3;
			p = memchr(p, ' ', (size_t)(stop - p)); /* after the type */
			if (p != NULL && (size_t)(stop - p - 1) >= tl && memcmp(p + 1, tag, tl) == 0 &&
			    (p + 1 + tl == stop || p[1 + tl] == ' '))
				return true;
		}
		line = stop + 1;
	}
	return false;
}

pid_t named_root_lingering(const char *tag, uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	if (d == NULL)
		return 0;
	while (found == 0 && (de = readdir(d)) != NULL) {
		char path[64], *text;
		struct stat st;
		size_t len;
		long pid = strtol(de->d_name, NULL, 10);
		int fd;

		if (pid <= 0 || pid == getpid() ||
		    snprintf(path, sizeof(path), "/proc/%ld/mountinfo", pid) <= 0 ||
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		/* Only the user's own: another user cannot hold a copy of ours
		 * (nor stall us by naming a mount of theirs the same). */
		if (fstat(fd, &st) == 0 && st.st_uid == uid &&
		    (text = read_fd_max(fd, MOUNTINFO_MAX, &len)) != NULL) {
			if (named_mountinfo_has(text, len, tag))
				found = (pid_t)pid;
			free(text);
		}
		close(fd);
	}
	closedir(d);
	return found;
}

/* Waits for every process that has an earlier mount of the container's
 * overlay (a run killed with kill -9 leaves its container's processes
 * for a moment) to end; -1 naming one that does not. */
static int wait_lingering(const struct named *n, uid_t uid, struct err *e)
{
	long long end = mono_ms() + LINGER_WAIT_MS;
	pid_t pid;

	while ((pid = named_root_lingering(n->tag, uid)) > 0) {
		long long left = end - mono_ms();
		int pfd;

		if (left <= 0)
			return err_set(e, EXIT_CTRUN, "--name %s: pid %ld still has its root from a "
				       "run that ended without it (killed?): wait for that process "
				       "to end, or end it", n->name, (long)pid);
		pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			(void)poll(&p, 1, (int)(left < 1000 ? left : 1000));
			close(pfd);
		}
	}
	return 0;
}

/* The door of pid in the locks directory (open as dirfd) as a socket
 * address: by the directory's descriptor, so a long cache path fits. */
static int door_addr(int dirfd, const char *name, long pid, struct sockaddr_un *sa)
{
	char file[NAME_MAX + 1];

	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (named_door_name(name, pid, file, sizeof(file)) < 0 ||
	    xsnprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dirfd, file) < 0)
		return -1;
	return 0;
}

/* Asks the door at sa for the root: 0 with h's root, mnt and user; 1 when
 * nobody listens there (a dead run's: the caller removes it); -1 when it
 * did not answer as a door of ours does. */
static int ask_door(const struct sockaddr_un *sa, bool rootless, struct img_holder *h)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), rv = -1;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	char text[PATH_MAX + 1];

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		rv = errno == ECONNREFUSED || errno == ENOENT ? 1 : -1;
	} else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.uid == geteuid() &&
		   poll(&p, 1, DOOR_WAIT_MS) > 0 &&
		   holder_msg_recv(fd, rootless, h, text, sizeof(text)) == 0) {
		rv = 0;
	}
	close(fd);
	return rv;
}

/* Another run's door of n: 1 with its root's descriptors in h, 0 when
 * none answers (the doors of dead runs removed on the way). */
static int join(const struct named *n, int dirfd, bool rootless, struct img_holder *h)
{
	DIR *d = opendir(n->locks);
	struct dirent *de;
	int found = 0;

	if (d == NULL)
		return 0;
	while (found == 0 && (de = readdir(d)) != NULL) {
		long pid = named_door_pid(de->d_name, n->name);
		struct sockaddr_un sa;
		int r;

		if (pid <= 0 || pid == getpid() || door_addr(dirfd, n->name, pid, &sa) < 0)
			continue;
		r = ask_door(&sa, rootless, h);
		if (r == 0)
			found = 1;
		else if (r == 1) /* under the gate: no run binds or removes doors meanwhile */
			unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
	return found;
}

/* What a server holds: its ends, and the root's descriptors (root, mnt,
 * user), made by it (maker) or handed over by another run's door. */
struct server {
	const struct named_root_req *q;
	int ctl, listen_fd, dirfd;
	bool maker;
	int fds[HOLDER_MSG_FDS];
	long door_pid; /* the pid in its door's name: its ctrun's */
};

/* In the server: everything but its own descriptors closed (ctrun's
 * others, the image holder's pipe among them, must not outlive ctrun in
 * it), 0 and 1 on /dev/null. */
static void close_others(const struct server *s)
{
	int keep[HOLDER_MSG_FDS + 6], n = 0, top = 2, null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	keep[n++] = s->ctl;
	keep[n++] = s->listen_fd;
	keep[n++] = s->dirfd;
	/* The users' lock: the root lives while a server does, so the lock must too. */
	keep[n++] = s->q->n->lock_fd;
	keep[n++] = s->q->holder_mnt;
	for (int i = 0; i < HOLDER_MSG_FDS; i++)
		keep[n++] = s->fds[i];
	for (int i = 0; i < n; i++)
		top = keep[i] > top ? keep[i] : top;
	for (int fd = 3; fd < top; fd++) {
		bool kept = false;

		for (int i = 0; i < n; i++)
			kept = kept || keep[i] == fd;
		if (!kept)
			close(fd);
	}
	if (syscall(SYS_close_range, (unsigned)top + 1, ~0U, 0U) < 0)
		for (int fd = top + 1; fd < 65536; fd++)
			close(fd);
}

/* The maker: the root's namespaces, the overlay mounted in them. */
static int make_root(struct server *s, struct err *e)
{
	const struct named_root_req *q = s->q;
	const char *what[] = { q->n->merged, "/proc/self/ns/mnt", "/proc/self/ns/user" };

	if (q->rootless) {
		if (userns_enter(q->uid, q->gid, e) < 0)
			return -1;
	} else if ((q->holder_mnt >= 0 && setns(q->holder_mnt, CLONE_NEWNS) < 0) ||
		   unshare(CLONE_NEWNS) < 0) {
		return err_sys(e, EXIT_CTRUN, "--name %s: a mount namespace for its root",
			       q->n->name);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_sys(e, EXIT_CTRUN, "--name %s: making mounts private", q->n->name);
	if (ovl_mount(q->lower, q->n->upper, q->n->work, q->n->merged, q->n->tag, q->rootless,
		      e) < 0)
		return -1;
	for (size_t i = 0; i < (q->rootless ? 3u : 2u); i++) {
		s->fds[i] = open(what[i], (i == 0 ? O_PATH | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
		if (s->fds[i] < 0)
			return err_sys(e, EXIT_CTRUN, "--name %s: %s", q->n->name, what[i]);
	}
	return 0;
}

/* Answers the door until its ctrun closes ctl: each connection of the
 * same user gets the root's descriptors, and is closed. */
static void serve(const struct server *s)
{
	size_t nfds = s->q->rootless ? 3 : 2;
	char file[NAME_MAX + 1];

	fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd p[2] = { { .fd = s->ctl, .events = POLLIN },
				       { .fd = s->listen_fd, .events = POLLIN } };
		char c;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents != 0 && read(s->ctl, &c, 1) <= 0)
			break;
		if (p[1].revents & POLLIN) {
			int cfd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			struct ucred cr;
			socklen_t cl = sizeof(cr);

			/* In the root's user namespace, the user's ids are root's here too. */
			if (cfd >= 0 && getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
			    cr.uid == getuid())
				(void)holder_msg_send(cfd, s->q->n->merged, s->fds, nfds);
			if (cfd >= 0)
				close(cfd);
		}
	}
	if (named_door_name(s->q->n->name, s->door_pid, file, sizeof(file)) == 0)
		unlinkat(s->dirfd, file, 0);
}

__attribute__((noreturn)) static void server_main(struct server *s)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				       SIGURG, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGALRM };
	const struct named_root_req *q = s->q;
	struct err e = { 0 };
	int sent[HOLDER_MSG_FDS];

	/* ctrun ends it (EOF on ctl), not a signal meant for the workers. */
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	close_others(s);
	if (s->maker) {
		if (make_root(s, &e) < 0)
			goto fail;
	} else if ((q->rootless && setns(s->fds[2], CLONE_NEWUSER) < 0) ||
		   setns(s->fds[1], CLONE_NEWNS) < 0) {
		err_sys(&e, EXIT_CTRUN, "--name %s: joining its root's namespaces", q->n->name);
		goto fail;
	}
	/* Our run's copy of the root's mount: made here, in its namespace. */
	memcpy(sent, s->fds, sizeof(sent));
	sent[0] = (int)open_tree(s->fds[0], "", OPEN_TREE_CLONE | AT_EMPTY_PATH | O_CLOEXEC);
	if (sent[0] < 0) {
		err_sys(&e, EXIT_CTRUN, "--name %s: a copy of its root's mount (Linux >= 5.2)",
			q->n->name);
		goto fail;
	}
	if (holder_msg_send(s->ctl, q->n->merged, sent, q->rootless ? 3 : 2) < 0)
		_exit(1);
	close(sent[0]);
	serve(s);
	_exit(0);
fail:
	if (write(s->ctl, e.msg, strlen(e.msg)) < 0)
		_exit(1);
	_exit(1);
}

/* Starts this run's server (the maker of a new root when s->maker) with
 * its door bound; its word: the copy of the root for our runtime. */
static int start_server(struct server *s, struct named_root *r, struct err *e)
{
	struct sockaddr_un sa;
	struct img_holder h;
	char msg[sizeof(e->msg)];
	int sv[2];
	pid_t self = getpid();

	s->door_pid = (long)self;
	if (door_addr(s->dirfd, s->q->n->name, s->door_pid, &sa) < 0)
		return err_set(e, EXIT_CTRUN, "--name %s: its door's name is too long",
			       s->q->n->name);
	unlink(sa.sun_path); /* a dead run's of our pid, under the gate */
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->listen_fd, 64) < 0)
		return err_sys(e, EXIT_CTRUN, "--name %s: its door in %s", s->q->n->name,
			       s->q->n->locks);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return err_sys(e, EXIT_CTRUN, "--name %s: socketpair", s->q->n->name);
	r->server = fork();
	if (r->server == 0) {
		close(sv[0]);
		s->ctl = sv[1];
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(1);
		server_main(s);
	}
	close(sv[1]);
	r->ctl = sv[0];
	if (r->server < 0) {
		unlink(sa.sun_path);
		return err_sys(e, EXIT_CTRUN, "--name %s: fork", s->q->n->name);
	}
	holder_init(&h);
	if (holder_msg_recv(r->ctl, s->q->rootless, &h, msg, sizeof(msg)) < 0) {
		named_root_leave(NULL, r);
		unlink(sa.sun_path);
		return err_set(e, EXIT_CTRUN, "%s", msg[0] != '\0' ? msg : "--name: its root's "
			       "server died");
	}
	r->tree = h.root;
	r->user = h.user;
	if (h.mnt >= 0)
		close(h.mnt);
	return 0;
}

int named_root_take(const struct named_root_req *q, struct named_root *r, struct err *e)
{
	struct server s = { .q = q, .ctl = -1, .listen_fd = -1 };
	struct img_holder h;
	int rv = -1;

	named_root_init(r);
	holder_init(&h);
	for (int i = 0; i < HOLDER_MSG_FDS; i++)
		s.fds[i] = -1;
	s.dirfd = open(q->n->locks, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s.dirfd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", q->n->locks);
	if (join(q->n, s.dirfd, q->rootless, &h) == 1) {
		s.fds[0] = h.root;
		s.fds[1] = h.mnt;
		s.fds[2] = h.user;
		if (named_share(q->n, e) < 0)
			goto out;
	} else {
		/* Nobody has it mounted: nobody may use it while we mount it. */
		if (named_claim(q->n, e) < 0 || wait_lingering(q->n, geteuid(), e) < 0)
			goto out;
		s.maker = true;
	}
	if (start_server(&s, r, e) < 0)
		goto out;
	if (s.maker && named_share(q->n, e) < 0)
		goto out;
	rv = 0;
out:
	if (rv < 0)
		named_root_leave(NULL, r);
	for (int i = 0; i < HOLDER_MSG_FDS; i++)
		if (s.fds[i] >= 0)
			close(s.fds[i]);
	if (s.listen_fd >= 0)
		close(s.listen_fd);
	close(s.dirfd);
	return rv;
}

void named_root_leave(struct named *n, struct named_root *r)
{
	bool gated = false;

	if (r->server <= 0 && r->tree < 0 && r->user < 0)
		return;
	/* Left under the gate: a run that comes meanwhile finds this door, or
	 * no door and no user. */
	if (n != NULL && n->gate_fd < 0)
		gated = named_gate_take(n) == 0;
	if (r->ctl >= 0)
		close(r->ctl);
	if (r->server > 0)
		while (waitpid(r->server, NULL, 0) < 0 && errno == EINTR)
			;
	for (int *const *fd = (int *const[]){ &r->tree, &r->user, NULL }; *fd; fd++)
		if (**fd >= 0)
			close(**fd);
	if (n != NULL && n->lock_fd >= 0)
		flock(n->lock_fd, LOCK_UN);
	if (gated)
		named_gate_release(n);
	named_root_init(r);
}
