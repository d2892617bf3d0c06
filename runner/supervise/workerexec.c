/* workerexec.c - a worker from fork to execve (see workerexec.h). */
#include "workerexec.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "err.h"

void set_foreground(pid_t pgid)
{
	sigset_t ttou, old;

	/* tcsetpgrp from a background group raises SIGTTOU. */
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	tcsetpgrp(STDIN_FILENO, pgid);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Writes the strings of `parts` (NULL-terminated) to stderr in one
 * write: async-signal-safe, for the forked child. */
static void child_say(const char *const *parts)
{
	char msg[PATH_MAX + 256];
	size_t len = 0;

	for (; *parts != NULL; parts++)
		for (const char *p = *parts; *p != '\0' && len < sizeof(msg) - 1; p++)
			msg[len++] = *p;
	msg[len++] = '\n';
	if (write(STDERR_FILENO, msg, len) < 0)
		return;
}

/* Decimal text of v into buf (at least 24 bytes): no snprintf in the child. */
static const char *child_long(long v, char *buf)
{
	char tmp[24];
	size_t n = 0, o = 0;
	unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;

	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		buf[o++] = '-';
	while (n > 0)
		buf[o++] = tmp[--n];
	buf[o] = '\0';
	return buf;
}

/* The forked worker, up to execve.  Async-signal-safe calls only:
 * strerrordesc_np reads glibc's constant table (no locale, no malloc). */
void worker_exec(const struct worker_image *w, pid_t parent, bool fg, int devnull,
		 const sigset_t *mask, int outw, int errw)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	char rank[24];
	int code, err;

	setpgid(0, 0);
	/* Dies with ctrun even before the guardian knows the group; the
	 * getppid check closes the race with ctrun dying before prctl. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(EXIT_CTRUN);
	if (fg)
		set_foreground(getpid());
	if ((devnull >= 0 && dup2(devnull, STDIN_FILENO) < 0) ||
	    (outw >= 0 && (dup2(outw, STDOUT_FILENO) < 0 || dup2(errw, STDERR_FILENO) < 0)))
		_exit(EXIT_CTRUN);
	/* Like Python's subprocess: a worker starts with default SIGPIPE. */
	sigaction(SIGPIPE, &dfl, NULL);
	sigaction(SIGXFSZ, &dfl, NULL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (w->cpus != NULL && sched_setaffinity(0, sizeof(*w->cpus), w->cpus) < 0) {
		err = errno;
		child_say((const char *const[]){ "ctrun: rank ", child_long(w->rank, rank),
						 ": cannot set CPU affinity: ", strerrordesc_np(err),
						 NULL });
	}
	execve(w->argv[0], w->argv, w->envp != NULL ? w->envp : environ);
	err = errno;
	code = err == ENOENT || err == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC;
	child_say((const char *const[]){ "ctrun: cannot execute ", w->argv[0], ": ",
					 strerrordesc_np(err), NULL });
	_exit(code);
}

