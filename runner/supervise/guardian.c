/* guardian.c - the process that outlives a killed ctrun (see guardian.h). */
#include "guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigloop.h"

/* Message meaning "clean exit": a process group id is never 0. */
#define GUARDIAN_BYE 0

static void close_from(int lowfd)
{
	long max;

	if (close_range((unsigned)lowfd, ~0U, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = lowfd; fd < max; fd++)
		close(fd);
}

/* The guardian itself: async-signal-safe calls only, as it is forked
 * from a process that may one day have threads. */
__attribute__((noreturn)) static void guardian_main(int fd, pid_t *groups, size_t cap,
						    char *const *on_death)
{
	/* Besides the signals ctrun forwards (sigloop.h): none of the step's
	 * signals may end the guardian. */
	static const int ignored[] = { SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGALRM };
	struct sigaction sa = { .sa_handler = SIG_IGN };
	size_t n = 0;
	sigset_t none;
	pid_t pg;
	int null;

	/* Out of ctrun's group: a kill aimed at ctrun's group must not take
	 * the guardian with it. */
	setpgid(0, 0);
	for (size_t i = 0; i < SIGLOOP_NFORWARDED; i++)
		sigaction(sigloop_forwarded[i], &sa, NULL);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		sigaction(ignored[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Hold nothing of ctrun's: a reader of ctrun's stdout must see EOF
	 * when ctrun goes, not when the guardian does. */
	if (fd != 3) {
		if (dup2(fd, 3) < 0)
			_exit(1);
		fd = 3;
	}
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	close_from(4);
	if (chdir("/") < 0) {
		/* harmless: only keeps a directory busy a little longer */
	}
	for (;;) {
		ssize_t r = read(fd, &pg, sizeof(pg));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(pg))
			break; /* EOF (or error): ctrun died without saying goodbye */
		if (pg == GUARDIAN_BYE)
			_exit(0);
		if (pg < 0) { /* forget: the group is gone, its id may be reused */
			for (size_t i = 0; i < n; i++)
				if (groups[i] == -pg) {
					groups[i] = groups[--n];
					break;
				}
			continue;
		}
		if (n < cap)
			groups[n++] = pg;
	}
	for (size_t i = 0; i < n; i++)
		kill(-groups[i], SIGKILL);
	/* The other nodes' ctruns must hear of it too (node mode's cancel of
	 * the step), as they would had ctrun failed any other way. */
	if (on_death != NULL && on_death[0] != NULL) {
		sa.sa_handler = SIG_DFL;
		for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
			sigaction(ignored[i], &sa, NULL);
		close(fd);
		execvp(on_death[0], on_death);
	}
	_exit(0);
}

int guardian_start(struct guardian *g, size_t max_groups, char *const *on_death, struct err *e)
{
	pid_t *groups;
	int p[2];

	g->pid = -1;
	g->fd = -1;
	/* Allocated before fork: the guardian does not call malloc. */
	groups = calloc(max_groups ? max_groups : 1, sizeof(*groups));
	if (groups == NULL)
		return err_sys(e, EXIT_CTRUN, "guardian");
	/* O_CLOEXEC: a worker holding the write end would hide ctrun's death. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(groups);
		return err_sys(e, EXIT_CTRUN, "guardian: pipe");
	}
	g->pid = fork();
	if (g->pid == 0) {
		close(p[1]);
		guardian_main(p[0], groups, max_groups, on_death);
	}
	free(groups);
	close(p[0]);
	if (g->pid < 0) {
		close(p[1]);
		return err_sys(e, EXIT_CTRUN, "guardian: fork");
	}
	g->fd = p[1];
	return 0;
}

static void send_pid(int fd, pid_t v)
{
	ssize_t r;

	/* 4 bytes < PIPE_BUF: atomic; the guardian reads them whole. */
	do
		r = write(fd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
}

void guardian_add(struct guardian *g, pid_t pgid)
{
	if (g->fd >= 0 && pgid > 0)
		send_pid(g->fd, pgid);
}

void guardian_forget(struct guardian *g, pid_t pgid)
{
	if (g->fd >= 0 && pgid > 0)
		send_pid(g->fd, -pgid);
}

bool guardian_reaped(struct guardian *g, pid_t pid)
{
	if (g->pid <= 0 || pid != g->pid)
		return false;
	g->pid = -1;
	return true;
}

void guardian_stop(struct guardian *g)
{
	pid_t r;

	if (g->fd >= 0) {
		send_pid(g->fd, GUARDIAN_BYE);
		close(g->fd);
		g->fd = -1;
	}
	if (g->pid > 0) {
		do
			r = waitpid(g->pid, NULL, 0);
		while (r < 0 && errno == EINTR);
		g->pid = -1;
	}
}
