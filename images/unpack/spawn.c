/* spawn.c - fork/exec/wait of external tools with a captured stderr tail (see spawn.h). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Keeps the last `size`-1 bytes of what the child wrote. */
static void keep_tail(char *tail, size_t size, size_t *len, const char *buf, size_t n)
{
	if (n >= size - 1) {
		memcpy(tail, buf + n - (size - 1), size - 1);
		*len = size - 1;
	} else {
		if (*len + n > size - 1) {
			size_t drop = *len + n - (size - 1);

			memmove(tail, tail + drop, *len - drop);
			*len -= drop;
		}
		memcpy(tail + *len, buf, n);
		*len += n;
	}
	tail[*len] = '\0';
}

/* The last non-empty line of the tool's stderr, for a one-line error. */
static const char *last_line(char *tail)
{
	char *end = tail + strlen(tail), *p;

	while (end > tail && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		*--end = '\0';
	p = strrchr(tail, '\n');
	return p != NULL ? p + 1 : tail;
}

int spawn_wait(char *const argv[], bool show_stdout, const int *ok_codes, struct err *e)
{
	int errpipe[2], status, code;
	char tail[512] = "", buf[4096];
	size_t tlen = 0;
	pid_t parent = getpid(), pid;
	ssize_t n;

	if (pipe2(errpipe, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: pipe", argv[0]);
	pid = fork();
	if (pid < 0) {
		close(errpipe[0]);
		close(errpipe[1]);
		return err_sys(e, EXIT_CTRUN, "%s: fork", argv[0]);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		sigset_t none;

		/* exec keeps the signal mask: a supervisor's blocked signals must not
		 * make the tool unkillable by them. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (null < 0 || dup2(null, 0) < 0 || dup2(show_stdout ? 2 : null, 1) < 0 ||
		    dup2(errpipe[1], 2) < 0)
			_exit(127);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(errpipe[1]);
	for (;;) {
		n = read(errpipe[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		keep_tail(tail, sizeof(tail), &tlen, buf, (size_t)n);
	}
	close(errpipe[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_sys(e, EXIT_CTRUN, "%s: wait", argv[0]);
	if (WIFSIGNALED(status))
		return err_set(e, EXIT_CTRUN, "%s killed by signal %d", argv[0], WTERMSIG(status));
	code = WEXITSTATUS(status);
	if (code == 0)
		return 0;
	for (const int *c = ok_codes; c != NULL && *c >= 0; c++)
		if (*c == code)
			return 0;
	return err_set(e, EXIT_CTRUN, "%s failed (exit %d): %s", argv[0], code,
		       *last_line(tail) ? last_line(tail) : "no message");
}
