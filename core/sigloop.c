/* sigloop.c - the one signal loop (see sigloop.h). */
#include "sigloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

const int sigloop_forwarded[SIGLOOP_NFORWARDED] = { SIGTERM, SIGINT,  SIGHUP,
						    SIGQUIT, SIGUSR1, SIGUSR2 };

bool sigloop_is_checkpoint(int sig)
{
	return sig == SIGUSR1 || sig == SIGUSR2;
}

void sigloop_block(struct sigloop *l, unsigned flags, const struct sigloop_ops *ops)
{
	memset(l, 0, sizeof(*l));
	l->sfd = -1;
	l->flags = flags;
	if (ops != NULL)
		l->ops = *ops;
	sigemptyset(&l->set);
	sigaddset(&l->set, SIGCHLD);
	if (flags & SIGLOOP_URG)
		sigaddset(&l->set, SIGURG);
	for (size_t k = 0; k < SIGLOOP_NFORWARDED; k++) {
		struct sigaction cur;

		if ((flags & SIGLOOP_KEEP_IGNORED) && sigaction(sigloop_forwarded[k], NULL, &cur) == 0 &&
		    cur.sa_handler == SIG_IGN)
			continue;
		sigaddset(&l->set, sigloop_forwarded[k]);
	}
	sigprocmask(SIG_BLOCK, &l->set, &l->old);
	l->blocked = true;
}

int sigloop_open(struct sigloop *l, struct err *e)
{
	l->sfd = signalfd(-1, &l->set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sfd < 0)
		return err_sys(e, EXIT_CTRUN, "signalfd");
	return 0;
}

int sigloop_start(struct sigloop *l, unsigned flags, const struct sigloop_ops *ops,
		  struct err *e)
{
	sigloop_block(l, flags, ops);
	if (sigloop_open(l, e) < 0) {
		sigloop_close(l);
		return -1;
	}
	return 0;
}

void sigloop_close(struct sigloop *l)
{
	if (l->sfd >= 0)
		close(l->sfd);
	l->sfd = -1;
	if (l->blocked)
		sigprocmask(SIG_SETMASK, &l->old, NULL);
	l->blocked = false;
	free(l->pfd);
	l->pfd = NULL;
	l->cap = 0;
}

int sigloop_add_child(struct sigloop *l, pid_t pid)
{
	for (size_t i = 0; i < SIGLOOP_MAXKIDS; i++) {
		if (l->kids[i] <= 0) {
			l->kids[i] = pid;
			return 0;
		}
	}
	return -1;
}

int sigloop_next(struct sigloop *l)
{
	struct signalfd_siginfo si;

	if (l->sfd < 0 || read(l->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

static void exited(struct sigloop *l, pid_t pid, int ws)
{
	if (l->ops.on_exit != NULL)
		l->ops.on_exit(l->ops.arg, pid, ws);
}

static void reap(struct sigloop *l)
{
	int ws;

	if (l->flags & SIGLOOP_REAP_ANY) {
		pid_t pid;

		while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
			exited(l, pid, ws);
		return;
	}
	for (size_t i = 0; i < SIGLOOP_MAXKIDS; i++) {
		pid_t pid = l->kids[i];

		if (pid > 0 && waitpid(pid, &ws, WNOHANG) == pid) {
			l->kids[i] = 0;
			exited(l, pid, ws);
		}
	}
}

static void dispatch_signals(struct sigloop *l)
{
	int sig;

	while ((sig = sigloop_next(l)) > 0) {
		if (sig == SIGCHLD)
			reap(l);
		else if (l->ops.on_signal != NULL)
			l->ops.on_signal(l->ops.arg, sig);
	}
}

static void dispatch_fds(struct sigloop *l, const struct pollfd *fds, size_t n)
{
	for (size_t k = 0; k < n && l->ops.on_fd != NULL; k++)
		if (fds[k].fd >= 0 && fds[k].revents != 0)
			l->ops.on_fd(l->ops.arg, k, fds[k].revents);
}

static int grow(struct sigloop *l, size_t n)
{
	struct pollfd *p;

	if (n <= l->cap)
		return 0;
	p = realloc(l->pfd, n * sizeof(*p));
	if (p == NULL)
		return -1;
	l->pfd = p;
	l->cap = n;
	return 0;
}

int sigloop_wait(struct sigloop *l, struct pollfd *fds, size_t n, int timeout_ms)
{
	bool sigs;

	if (grow(l, n + 1) < 0)
		return -1;
	l->pfd[0] = (struct pollfd){ .fd = l->sfd, .events = POLLIN };
	for (size_t k = 0; k < n; k++) {
		fds[k].revents = 0;
		l->pfd[k + 1] = fds[k];
	}
	if (poll(l->pfd, n + 1, timeout_ms) < 0)
		return errno == EINTR ? 0 : -1;
	for (size_t k = 0; k < n; k++)
		fds[k].revents = l->pfd[k + 1].revents;
	sigs = l->pfd[0].revents != 0;
	if (l->flags & SIGLOOP_FDS_FIRST)
		dispatch_fds(l, fds, n);
	if (sigs)
		dispatch_signals(l);
	if (!(l->flags & SIGLOOP_FDS_FIRST))
		dispatch_fds(l, fds, n);
	return 0;
}
