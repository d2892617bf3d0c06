/* sphold.c - the hold, `ctrun __hold`, from slurmstepd (sphold.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sphold.h"
#include "util.h"

#define LOG_TAIL (64 * 1024)

void sp_hold_init(struct sp_hold *h)
{
	memset(h, 0, sizeof(*h));
	h->pid = h->killed = -1;
	h->agent = -1;
	h->pidfd = h->sock = h->log = -1;
	for (int i = 0; i < HOLD_NFDS; i++)
		h->fds[i] = -1;
}

/* The child: the job's user, for good, then ctrun.  Never returns. */
static void child(int sock, int log, char *const *argv, char *const *envp,
		  const struct sp_user *u)
{
	sigset_t all;

	/* slurmstepd's signal mask and handlers are its own. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (dup2(sock, 0) < 0 || dup2(sock, 1) < 0 || dup2(log, 2) < 0)
		_exit(126);
	/* Only 0, 1, 2: slurmstepd's descriptors (its sockets, the job's
	 * credentials) are none of ctrun's business. */
	if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	/* Its own session: a terminal of the step (srun --pty) is task 0's. */
	setsid();
	/* slurmstepd dropped only its effective ids for user_init: get them
	 * back, then become the user for real (real, effective and saved). */
	if (getuid() == 0) {
		if (seteuid(0) < 0 || setgroups((size_t)(u->ngids > 0 ? u->ngids : 0), u->gids) < 0 ||
		    setresgid(u->gid, u->gid, u->gid) < 0 || setresuid(u->uid, u->uid, u->uid) < 0) {
			dprintf(2, "ctrun: cannot become uid %u: %s\n", (unsigned)u->uid,
				strerror(errno));
			_exit(126);
		}
	} else if (setresuid(u->uid, u->uid, u->uid) < 0) {
		dprintf(2, "ctrun: cannot become uid %u: %s\n", (unsigned)u->uid, strerror(errno));
		_exit(126);
	}
	/* slurmstepd gone: nothing is left to end the hold (after the id
	 * change, which clears this setting). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	execve(argv[0], argv, envp);
	dprintf(2, "ctrun: cannot run %s: %s (plugstack.conf's ctrun=)\n", argv[0], strerror(errno));
	_exit(127);
}

int sp_hold_open(struct sp_hold *h, long pid, struct err *e)
{
	static const char *const names[] = HOLD_NS_NAMES;

	for (int i = 0; i < HOLD_NFDS; i++) {
		char path[64];

		if (names[i] == NULL)
			snprintf(path, sizeof(path), "/proc/%ld/root", pid);
		else
			snprintf(path, sizeof(path), "/proc/%ld/ns/%s", pid, names[i]);
		h->fds[i] = open(path, (names[i] == NULL ? O_PATH | O_DIRECTORY : O_RDONLY) |
					       O_CLOEXEC);
		if (h->fds[i] < 0 && (i == HOLD_FD_ROOT || i == HOLD_FD_USER || i == HOLD_FD_MNT))
			return err_sys(e, EXIT_CTRUN, "opening the container's %s", path);
	}
	return 0;
}

/* The message's text after its first line, once whole: CWD, then
 * KEY=VALUE entries up to an empty one.  1 when whole, 0 not yet. */
static int parse_text(struct sp_hold *h, const char *p, size_t left, struct err *e)
{
	const char *start = p;

	while (left > 0) {
		size_t l = strnlen(p, left);

		if (l == left)
			return 0;
		if (l == 0 && p != start) {
			const char *q = start + strlen(start) + 1;

			h->cwd = strdup(start);
			if (h->cwd == NULL)
				return err_sys(e, EXIT_CTRUN, "hold message");
			for (; *q != '\0'; q += strlen(q) + 1)
				if (strv_push(&h->env, q) < 0)
					return err_sys(e, EXIT_CTRUN, "hold message");
			return 1;
		}
		p += l + 1;
		left -= l + 1;
	}
	return 0;
}

/* Reads the hold message from h->sock; what comes before its first line
 * (the entrypoint's output) goes to the log.  -1 with e. */
static int receive(struct sp_hold *h, struct err *e)
{
	size_t cap = 64 * 1024, len = 0, head = 0;
	char *buf = malloc(cap), *more;
	long pid = -1;
	int rv = -1;

	if (buf == NULL)
		return err_sys(e, EXIT_CTRUN, "hold message");
	for (;;) {
		ssize_t n = read(h->sock, buf + len, cap - len - 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_sys(e, EXIT_CTRUN, "reading ctrun's hold message");
			break;
		}
		if (n == 0) {
			err_set(e, EXIT_CTRUN, "ctrun ended before its container was ready");
			break;
		}
		len += (size_t)n;
		buf[len] = '\0';
		if (pid < 0) {
			/* The first line of ours, at the start of a line. */
			size_t ml = strlen(HOLD_MAGIC);
			char *m = buf, *nl;

			while ((m = memmem(m, len - (size_t)(m - buf), HOLD_MAGIC, ml)) != NULL &&
			       m != buf && m[-1] != '\n')
				m++;
			if (m == NULL || (nl = memchr(m, '\n', len - (size_t)(m - buf))) == NULL)
				goto more;
			/* The entrypoint's words, kept with ctrun's (a failed
			 * write loses only them). */
			if (m > buf && write(h->log, buf, (size_t)(m - buf)) < 0)
				m[0] = m[0];
			*nl = '\0';
			if (sscanf(m + ml, "%ld", &pid) != 1 || pid <= 1) {
				err_set(e, EXIT_CTRUN, "ctrun's hold message names no process (another "
					"ctrun than the plugin's?)");
				break;
			}
			head = (size_t)(nl + 1 - buf);
		}
		if ((rv = parse_text(h, buf + head, len - head, e)) != 0)
			break;
more:
		if (len + 1 >= cap) {
			if (cap > HOLD_TEXT_MAX + 64 * 1024 || (more = realloc(buf, cap * 2)) == NULL) {
				err_set(e, EXIT_CTRUN, "ctrun's hold message is over %u bytes",
					HOLD_TEXT_MAX);
				break;
			}
			buf = more;
			cap *= 2;
		}
	}
	free(buf);
	if (rv == 1) {
		h->agent = pid;
		return sp_hold_open(h, pid, e);
	}
	return -1;
}

int sp_hold_start(struct sp_hold *h, char *const *argv, char *const *envp,
		  const struct sp_user *u, struct err *e)
{
	int sv[2];

	h->log = memfd_create("ctrun-hold-log", MFD_CLOEXEC);
	if (h->log < 0)
		return err_sys(e, EXIT_CTRUN, "memfd_create");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_sys(e, EXIT_CTRUN, "socketpair");
	h->pid = fork();
	if (h->pid == 0)
		child(sv[1], h->log, argv, envp, u);
	close(sv[1]);
	h->sock = sv[0];
	if (h->pid < 0)
		return err_sys(e, EXIT_CTRUN, "fork");
	h->pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
	if (receive(h, e) < 0) {
		sp_hold_stop(h, 10);
		return -1;
	}
	return 0;
}

void sp_hold_log(const struct sp_hold *h, void (*fn)(const char *line, void *arg), void *arg)
{
	off_t size = h->log >= 0 ? lseek(h->log, 0, SEEK_END) : -1;
	off_t from = size > LOG_TAIL ? size - LOG_TAIL : 0;
	char *buf, *p, *nl;
	ssize_t n;

	if (size <= 0 || (buf = malloc((size_t)(size - from) + 1)) == NULL)
		return;
	n = pread(h->log, buf, (size_t)(size - from), from);
	if (n > 0) {
		buf[n] = '\0';
		for (p = buf; *p != '\0'; p = nl + 1) {
			nl = strchr(p, '\n');
			if (nl != NULL)
				*nl = '\0';
			if (*p != '\0')
				fn(p, arg);
			if (nl == NULL)
				break;
		}
	}
	free(buf);
}

/* Waits up to timeout_s seconds for pid to end, else kills its process
 * group.  Its exit status; -1 when a signal ended it, it was killed or
 * someone else reaped it (slurmstepd's own wait3(-1)). */
static int wait_end(pid_t pid, int pidfd, int timeout_s)
{
	long long end = mono_ms() + timeout_s * 1000LL;
	int ws = 0;

	for (;;) {
		pid_t got = waitpid(pid, &ws, WNOHANG);
		long long left = end - mono_ms();

		if (got == pid)
			return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
		if (got < 0 && errno == ECHILD)
			return -1;
		if (left <= 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &ws, 0);
			return -1;
		}
		if (pidfd >= 0) {
			struct pollfd p = { .fd = pidfd, .events = POLLIN };

			poll(&p, 1, (int)(left < 200 ? left : 200));
		} else {
			usleep(20000);
		}
	}
}

int sp_hold_stop(struct sp_hold *h, int timeout_s)
{
	int status;

	if (h->sock >= 0) {
		close(h->sock);
		h->sock = -1;
	}
	if (h->pid <= 0)
		return -1;
	status = wait_end(h->pid, h->pidfd, timeout_s);
	/* Not ended by itself: what it made may still be there. */
	if (status < 0)
		h->killed = h->pid;
	h->pid = -1;
	return status;
}

void sp_hold_reap(struct sp_hold *h, const char *ctrun, struct strv *env,
		  const struct sp_user *u)
{
	char pid[32], *argv[] = { (char *)ctrun, (char *)"__hold", NULL };
	pid_t child_pid;
	int sv[2], pidfd;

	if (h->killed <= 0)
		return;
	snprintf(pid, sizeof(pid), "%ld", (long)h->killed);
	h->killed = -1;
	if (h->log < 0 || strv_setenv(env, "CTRUN_HOLD_REAP", pid, 1) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	child_pid = fork();
	if (child_pid == 0)
		child(sv[1], h->log, argv, env->v, u);
	close(sv[1]);
	if (child_pid > 0) {
		pidfd = (int)syscall(SYS_pidfd_open, child_pid, 0);
		wait_end(child_pid, pidfd, 10);
		if (pidfd >= 0)
			close(pidfd);
	}
	close(sv[0]);
}

void sp_hold_free(struct sp_hold *h)
{
	for (int i = 0; i < HOLD_NFDS; i++)
		if (h->fds[i] >= 0)
			close(h->fds[i]);
	if (h->pidfd >= 0)
		close(h->pidfd);
	if (h->log >= 0)
		close(h->log);
	if (h->sock >= 0)
		close(h->sock);
	free(h->cwd);
	strv_free(&h->env);
	sp_hold_init(h);
}
