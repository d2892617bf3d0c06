/* runtime.c - choosing a runtime, and writing, printing and running an
 * adapter's plan (see container.h). */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quote.h"
#include "rootpath.h"
#include "util.h"

/* The missing directories above path (never through a symbolic link). */
static int make_parents(const char *path)
{
	char dir[PATH_MAX];

	if (xsnprintf(dir, sizeof(dir), "%s", path) < 0)
		return -1;
	for (char *s = strchr(dir + 1, '/'); s != NULL; s = strchr(s + 1, '/')) {
		struct stat st;

		*s = '\0';
		if (lstat(dir, &st) < 0 && (errno != ENOENT || mkdir(dir, 0755) < 0))
			return -1;
		if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
		*s = '/';
	}
	return 0;
}

/* plan.need_user: the caller's login name, else its uid, into buf. */
static const char *user_name(char *buf, size_t size)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw != NULL && pw->pw_name[0] != '\0' && xsnprintf(buf, size, "%s", pw->pw_name) >= 0)
		return buf;
	return xsnprintf(buf, size, "%u", (unsigned)geteuid()) < 0 ? "unknown" : buf;
}

int ctr_plan_write(const struct ctr_plan *p, struct err *e)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct ctr_file *f = &p->files[i];
		int fd;

		if (make_parents(f->path) < 0)
			return err_sys(e, EXIT_CTRUN, "writing %s", f->path);
		fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, f->mode);
		if (fd < 0)
			return err_sys(e, EXIT_CTRUN, "writing %s", f->path);
		if (write_all(fd, f->data, f->len) < 0) {
			close(fd);
			return err_sys(e, EXIT_CTRUN, "writing %s", f->path);
		}
		if (fchmod(fd, f->mode) < 0 || close(fd) < 0)
			return err_sys(e, EXIT_CTRUN, "writing %s", f->path);
	}
	for (size_t i = 0; i + 1 < p->links.n; i += 2)
		if (make_parents(p->links.v[i + 1]) < 0 || symlink(p->links.v[i], p->links.v[i + 1]) < 0)
			return err_sys(e, EXIT_CTRUN, "link %s", p->links.v[i + 1]);
	return 0;
}

void ctr_plan_print(const struct ctr_spec *s, const struct ctr_plan *p)
{
	printf("# container: runtime %s (%s), image %s (%s)\n", ctr_runtime_name(s->rt), s->bin,
	       s->image, image_kind_name(s->kind));
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct ctr_file *f = &p->files[i];

		printf("# file %s:\n", f->path);
		fwrite(f->data, 1, f->len, stdout);
		if (f->len > 0 && f->data[f->len - 1] != '\n')
			putchar('\n');
		printf("# end of %s\n", f->path);
	}
	for (size_t i = 0; i + 1 < p->links.n; i += 2)
		printf("# link %s -> %s\n", p->links.v[i + 1], p->links.v[i]);
	if (p->ovl) {
		printf("# in a private mount namespace%s: tmpfs on ", s->rootless ?
		       " and a user namespace mapping the caller to root" : "");
		shell_quote(stdout, p->ovl_tmp);
		fputs(", overlay of ", stdout);
		shell_quote(stdout, p->ovl_lower);
		fputs(" on ", stdout);
		shell_quote(stdout, p->ovl_merged);
		fputs(" with the mount points created", stdout);
		if (p->ovl_points.n > 0) {
			/* ch-run's own (rt.h ovl_points). */
			fputs(" (also, where the image has none:", stdout);
			for (size_t i = 0; i < p->ovl_points.n; i++) {
				putchar(' ');
				shell_quote(stdout, p->ovl_points.v[i].dst);
			}
			putchar(')');
		}
		if (s->named_upper != NULL) {
			fputs(", its upper layer ", stdout);
			shell_quote(stdout, s->named_upper);
		}
		if (p->hide_cgroup2)
			fputs(", a tmpfs over /sys/fs/cgroup/unified if cgroup2 there holds controllers",
			      stdout);
		if (p->ovl_stage) {
			/* ch-run binds read-write: it gets the staged binds (overlay.c). */
			fputs(", each mount's source bound with its options at ", stdout);
			shell_quote(stdout, p->ovl_tmp);
			fputs("/b/N", stdout);
		}
		fputs(", then:\n", stdout);
	}
	/* Prefix patterns are no env(1) syntax: a comment says what goes. */
	for (size_t i = 0; i < p->unsetenv.n; i++) {
		const char *u = p->unsetenv.v[i];

		if (u[0] != '\0' && u[strlen(u) - 1] == '*')
			printf("# removed from its environment: every %s variable%s", u,
			       p->keepenv.n > 0 ? " but" : "\n");
		for (size_t k = 0; u[0] != '\0' && u[strlen(u) - 1] == '*' && k < p->keepenv.n; k++)
			if (strncmp(p->keepenv.v[k], u, strlen(u) - 1) == 0)
				printf(" %s", p->keepenv.v[k]);
		if (u[0] != '\0' && u[strlen(u) - 1] == '*' && p->keepenv.n > 0)
			putchar('\n');
	}
	bool plain_unset = false;

	for (size_t i = 0; i < p->unsetenv.n; i++)
		plain_unset |= p->unsetenv.v[i][0] != '\0' &&
			       p->unsetenv.v[i][strlen(p->unsetenv.v[i]) - 1] != '*';
	if (p->setenv.n > 0 || plain_unset || (p->need_user && getenv("USER") == NULL)) {
		fputs("env", stdout);
		for (size_t i = 0; i < p->unsetenv.n; i++) {
			const char *u = p->unsetenv.v[i];

			if (u[0] == '\0' || u[strlen(u) - 1] == '*')
				continue;
			fputs(" -u ", stdout);
			shell_quote(stdout, u);
		}
		for (size_t i = 0; i < p->setenv.n; i++) {
			putchar(' ');
			shell_quote(stdout, p->setenv.v[i]);
		}
		if (p->need_user && getenv("USER") == NULL) {
			char user[256], kv[300];

			snprintf(kv, sizeof(kv), "USER=%s", user_name(user, sizeof(user)));
			putchar(' ');
			shell_quote(stdout, kv);
		}
		putchar(' ');
	}
	shell_quote_argv(stdout, p->argv.v);
	putchar('\n');
}

/* The child's environment: envp, minus unsetenv, plus setenv (and $USER
 * when the runtime needs one and there is none). */
static int child_env(const struct ctr_plan *p, char *const *envp, struct strv *env)
{
	char user[256];

	if (strv_extend(env, envp) < 0)
		return -1;
	if (p->need_user && envp_get(envp, "USER") == NULL &&
	    strv_setenv(env, "USER", user_name(user, sizeof(user)), 1) < 0)
		return -1;
	for (size_t i = 0; i < p->unsetenv.n; i++) {
		const char *u = p->unsetenv.v[i];
		size_t n = strlen(u);

		if (n == 0 || u[n - 1] != '*') {
			strv_unsetenv(env, u);
			continue;
		}
		for (size_t k = 0; k < env->n;) {
			const char *kv = env->v[k], *eq = strchr(kv, '=');
			bool keep = false;

			for (size_t j = 0; eq != NULL && j < p->keepenv.n; j++)
				keep |= strlen(p->keepenv.v[j]) == (size_t)(eq - kv) &&
					strncmp(kv, p->keepenv.v[j], (size_t)(eq - kv)) == 0;
			if (!keep && strncmp(kv, u, n - 1) == 0) {
				free(env->v[k]);
				memmove(&env->v[k], &env->v[k + 1], (env->n - k) * sizeof(*env->v));
				env->n--;
			} else {
				k++;
			}
		}
	}
	for (size_t i = 0; i < p->setenv.n; i++) {
		char *kv = p->setenv.v[i], *eq = strchr(kv, '=');
		int rc;

		if (eq == NULL)
			continue;
		*eq = '\0';
		rc = strv_setenv(env, kv, eq + 1, 1);
		*eq = '=';
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* In the runtime's child, just before its exec: fd as descriptor 3,
 * inherited (the error pipe *errp moved out of the way first). */
static int pass_fd3(int fd, int *errp)
{
	if (*errp == 3) {
		int moved = fcntl(3, F_DUPFD_CLOEXEC, 4);

		if (moved < 0)
			return -1;
		*errp = moved;
	}
	if (fd != 3)
		return dup2(fd, 3) < 0 ? -1 : 0;
	return fcntl(3, F_SETFD, 0);
}

pid_t ctr_plan_spawn(const struct ctr_spec *s, const struct ctr_plan *p, char *const *envp,
		     struct err *e)
{
	struct strv env = { 0 };
	int errp[2];
	pid_t pid, self = getpid();
	char msg[1024];
	ssize_t n;

	if (child_env(p, envp, &env) < 0) {
		strv_free(&env);
		return err_sys(e, EXIT_CTRUN, "runtime environment");
	}
	/* The child reports a set-up or exec failure on this pipe (CLOEXEC:
	 * a successful exec closes it, and the parent reads EOF). */
	if (pipe2(errp, O_CLOEXEC) < 0) {
		strv_free(&env);
		return err_sys(e, EXIT_CTRUN, "pipe");
	}
	pid = fork();
	if (pid < 0) {
		close(errp[0]);
		close(errp[1]);
		strv_free(&env);
		return err_sys(e, EXIT_CTRUN, "fork");
	}
	if (pid == 0) {
		struct err ce = { 0 };

		sigset_t none;

		close(errp[0]);
		/* A clean start: ctrun blocks and ignores signals it handles itself. */
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* The runtime dies with ctrun; the agent notices through its
		 * control FIFO and stops the workers. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(EXIT_CTRUN);
		if (p->ovl && overlay_enter(s, p, &ce) < 0) {
			if (write(errp[1], ce.msg, strlen(ce.msg)) < 0)
				_exit(EXIT_CTRUN);
			_exit(EXIT_CTRUN);
		}
		if (s->pmi_fd > 0 && pass_fd3(s->pmi_fd, &errp[1]) < 0) {
			snprintf(msg, sizeof(msg), "PMI_FD %d: %s", s->pmi_fd, strerror(errno));
			if (write(errp[1], msg, strlen(msg)) < 0)
				_exit(EXIT_CTRUN);
			_exit(EXIT_CTRUN);
		}
		execvpe(p->argv.v[0], p->argv.v, env.v);
		snprintf(msg, sizeof(msg), "cannot execute %s: %s", p->argv.v[0], strerror(errno));
		if (write(errp[1], msg, strlen(msg)) < 0)
			_exit(EXIT_CTRUN);
		_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	close(errp[1]);
	strv_free(&env);
	do
		n = read(errp[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(errp[0]);
	if (n > 0) {
		msg[n] = '\0';
		err_set(e, EXIT_CTRUN, "%s", msg);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return pid;
}

