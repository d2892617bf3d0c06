/* holdsrun_server.c - the host's srun for a batch script that runs in the
 * container (ctrun __hold of the batch step, CTRUN_HOLD_SRUN=1): a child
 * of ctrun __hold serves RUN/srun.sock; the agent, run as `srun` in the
 * container, hands over its arguments, environment, working directory
 * and descriptors (holdmsg.h), and gets srun's status.  The other half,
 * the agent's, is holdsrun_client.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentspec.h"
#include "err.h"
#include "holdmsg.h"
#include "strv.h"
#include "util.h"

/* The request: descriptors into fds, text until the client's end. */
static char *receive(int conn, int *fds, size_t *len)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap), *more;
	bool first = true;

	while (buf != NULL) {
		struct iovec iov = { buf + n, cap - n - 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t r;

		if (first) {
			m.msg_control = u.b;
			m.msg_controllen = sizeof(u.b);
		}
		r = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (struct cmsghdr *c = first ? CMSG_FIRSTHDR(&m) : NULL; c != NULL;
		     c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int) * 3))
				memcpy(fds, CMSG_DATA(c), sizeof(int) * 3);
		first = false;
		n += (size_t)r;
		if (n + 1 == cap) {
			if (cap > SRUN_TEXT_MAX || (more = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = more;
			cap *= 2;
		}
	}
	if (buf != NULL)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* Entries from *p up to an empty one (or the end). */
static void take(const char **p, const char *end, struct strv *out)
{
	while (*p < end && **p != '\0') {
		strv_push(out, *p);
		*p += strlen(*p) + 1;
	}
	if (*p < end)
		(*p)++;
}

/* One request, in its own process: srun run, its status sent back. */
static void serve(int conn)
{
	int fds[3] = { -1, -1, -1 }, ws = 0;
	size_t len = 0, magic = strlen(SRUN_MAGIC "\n");
	char *text = receive(conn, fds, &len), reply[32];
	struct strv argv = { 0 }, env = { 0 };
	const char *p, *end, *cwd;
	pid_t pid;

	if (text == NULL || len < magic || memcmp(text, SRUN_MAGIC "\n", magic) != 0 || fds[2] < 0)
		_exit(EXIT_CTRUN);
	p = text + magic;
	end = text + len;
	strv_push(&argv, "srun");
	take(&p, end, &argv);
	take(&p, end, &env);
	cwd = p < end ? p : "/";
	/* The image's loader settings are not for the host's srun (the steps'
	 * containers set them again). */
	strv_unsetenv(&env, "LD_LIBRARY_PATH");
	strv_unsetenv(&env, "LD_PRELOAD");
	strv_unsetenv(&env, "LD_AUDIT");
	signal(SIGCHLD, SIG_DFL);
	pid = fork();
	if (pid == 0) {
		if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
			_exit(EXIT_CTRUN);
		if (chdir(cwd) < 0)
			dprintf(2, "srun: ctrun: %s is not on the host: srun runs in %s\n", cwd,
				getcwd(reply, sizeof(reply)) != NULL ? reply : "ctrun's directory");
		/* srun from the host's PATH (this process's), with the script's
		 * environment. */
		execvpe("srun", argv.v, env.v);
		dprintf(2, "srun: ctrun: cannot run the host's srun: %s\n", strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	while (pid > 0 && waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	snprintf(reply, sizeof(reply), "status %d\n",
		 pid < 0 ? EXIT_CTRUN : WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
	write_all(conn, reply, strlen(reply));
	_exit(0);
}

pid_t hold_srun_start(const char *rundir, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], link[PATH_MAX];
	int lfd, null;
	pid_t pid;

	if (xsnprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", rundir, SRUN_SOCK) < 0 ||
	    xsnprintf(dir, sizeof(dir), "%s/%s", rundir, SRUN_BIN_DIR) < 0 ||
	    xsnprintf(link, sizeof(link), "%s/srun", dir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory %s: path too long for srun's socket",
			       rundir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
	    (mkdir(dir, 0755) < 0 && errno != EEXIST) || symlink(AGENT_BIN, link) < 0) {
		err_sys(e, EXIT_CTRUN, "srun for the batch script (%s)", sa.sun_path);
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(lfd);
		return err_sys(e, EXIT_CTRUN, "fork");
	}
	if (pid > 0) {
		close(lfd);
		return pid;
	}
	/* The server: not the plugin's socket's holder (0 and 1), nor a
	 * process the step's signals stop. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
		_exit(EXIT_CTRUN);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_IGN); /* SIGCHLD too: no zombies */
	for (;;) {
		int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			_exit(EXIT_CTRUN);
		}
		if (fork() == 0) {
			close(lfd);
			serve(conn);
		}
		close(conn);
	}
}

void hold_srun_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}
