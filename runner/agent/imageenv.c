/* imageenv.c - an image's /.singularity.d/env scripts, sourced by its own
 * shell inside the container (imageenv.h). */
#include "imageenv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Fixed: the directory and the printer arrive as $1 and $2, never as code.
 * The loop is apptainer's exec action (`for script in
 * /.singularity.d/env/ *.sh; do if [ -f "$script" ]; then . "$script"; fi;
 * done`), its names prefixed so a script's own variables are not touched,
 * and the pipe closed while a script runs (a daemon it starts cannot hold
 * it open). */
static const char script[] =
	"__ctrun_d=$1 __ctrun_p=$2\n"
	"shift 2\n"
	"for __ctrun_f in \"$__ctrun_d\"/*.sh; do\n"
	"\tif [ -f \"$__ctrun_f\" ]; then\n"
	"\t\t. \"$__ctrun_f\" 3>&-\n"
	"\tfi\n"
	"done\n"
	"unset __ctrun_d __ctrun_f\n"
	"exec \"$__ctrun_p\" " IMAGEENV_PRINT_ARG "\n";

const char imageenv_exec_script[] =
	"for __ctrun_f in " IMAGEENV_DIR "/*.sh; do\n"
	"\tif [ -f \"$__ctrun_f\" ]; then\n"
	"\t\t. \"$__ctrun_f\"\n"
	"\tfi\n"
	"done\n"
	"unset __ctrun_f\n"
	"exec \"$@\"\n";

bool imageenv_has_scripts(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	while (!found && d != NULL && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		char path[4096];
		struct stat st;

		found = n > 3 && strcmp(de->d_name + n - 3, ".sh") == 0 &&
			xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= 0 &&
			stat(path, &st) == 0 && S_ISREG(st.st_mode);
	}
	if (d != NULL)
		closedir(d);
	return found;
}

int imageenv_print(int fd, char *const *env)
{
	for (; env != NULL && *env != NULL; env++)
		if ((*env)[0] != '\0' && write_all(fd, *env, strlen(*env) + 1) < 0)
			return -1;
	return write_all(fd, "", 1);
}

/* Set by the shell for itself, not by the image. */
static bool shell_own(const char *kv)
{
	static const char *const own[] = { "PWD=", "OLDPWD=", "SHLVL=", "_=", NULL };

	for (size_t i = 0; own[i] != NULL; i++)
		if (strncmp(kv, own[i], strlen(own[i])) == 0)
			return true;
	return false;
}

int imageenv_parse(const char *buf, size_t len, char *const *before, struct strv *out,
		   struct err *e)
{
	size_t off = 0;

	for (;;) {
		const char *end = memchr(buf + off, '\0', len - off);
		size_t n;

		if (off >= len || end == NULL)
			goto malformed;
		n = (size_t)(end - (buf + off));
		if (n == 0)
			break;
		if (buf[off] == '=' || memchr(buf + off, '=', n) == NULL)
			goto malformed;
		if (!shell_own(buf + off) && strv_pushn(out, buf + off, n) < 0)
			return err_sys(e, EXIT_CTRUN, "image environment");
		off += n + 1;
	}
	if (off + 1 != len)
		goto malformed;
	for (; before != NULL && *before != NULL; before++)
		if (shell_own(*before) && strv_push(out, *before) < 0)
			return err_sys(e, EXIT_CTRUN, "image environment");
	return 0;
malformed:
	strv_free(out);
	return err_set(e, EXIT_CTRUN, "the environment printed after the image's scripts is "
		       "incomplete or malformed (a script ended the shell?)");
}

/* The child: the pipe at IMAGEENV_FD, stdout on stderr, stdin empty. */
static void child(int wfd, const char *sh, const char *dir, const char *printer,
		  char *const *env)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char *const argv[] = { (char *)"sh", (char *)"-c", (char *)script, (char *)"sh",
			       (char *)dir, (char *)printer, NULL };
	sigset_t none;

	if (null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0 ||
	    (wfd != IMAGEENV_FD && dup2(wfd, IMAGEENV_FD) < 0))
		_exit(127);
	if (wfd == IMAGEENV_FD && fcntl(wfd, F_SETFD, 0) < 0)
		_exit(127);
	/* The supervisor blocks signals for its signalfd; the shell must not. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(sh, argv, env);
	_exit(127);
}

int imageenv_source(const char *sh, const char *dir, const char *printer, char *const *env,
		    int timeout_ms, struct strv *out, struct err *e)
{
	int pfd[2] = { -1, -1 }, ws = 0, rv = -1;
	long deadline = mono_ms() + timeout_ms;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	bool timed_out = false, big = false, failed = false;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "image environment: pipe");
	pid = fork();
	if (pid < 0) {
		err_sys(e, EXIT_CTRUN, "image environment: fork");
		goto out;
	}
	if (pid == 0)
		child(pfd[1], sh, dir, printer, env);
	close(pfd[1]);
	pfd[1] = -1;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		long left = deadline - mono_ms();
		ssize_t n;
		int r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			failed = err_sys(e, EXIT_CTRUN, "image environment: poll") < 0;
			break;
		}
		if (r == 0)
			continue;
		if (len == cap) {
			char *t;

			if (cap >= IMAGEENV_MAX) {
				big = true;
				break;
			}
			cap = cap ? cap * 2 : 65536;
			t = realloc(buf, cap);
			if (t == NULL) {
				failed = err_sys(e, EXIT_CTRUN, "image environment") < 0;
				break;
			}
			buf = t;
		}
		n = read(pfd[0], buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		/* The closing empty entry: complete, whatever still holds the pipe. */
		if (len >= 2 && buf[len - 1] == '\0' && buf[len - 2] == '\0')
			break;
		if (len == 1 && buf[0] == '\0')
			break;
	}
	if (timed_out || big)
		kill(pid, SIGKILL);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (failed)
		goto out;
	if (timed_out)
		err_set(e, EXIT_CTRUN, "the image's %s/*.sh scripts did not finish within %d s", dir,
			timeout_ms / 1000);
	else if (big)
		err_set(e, EXIT_CTRUN, "the image's %s/*.sh scripts left more than %u bytes of "
			"environment", dir, IMAGEENV_MAX);
	else if (len == 0)
		err_set(e, EXIT_CTRUN, "sourcing the image's %s/*.sh with %s failed (exit status "
			"%d): a script failed or ended the shell", dir, sh,
			WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
	else
		rv = imageenv_parse(buf, len, env, out, e);
out:
	free(buf);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return rv;
}
