/* holdmsg.c - ctrun-agent --hold: the container of `ctrun __hold` tells
 * the SPANK plugin how to join it, then holds it (holdmsg.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agentspec.h"
#include "err.h"
#include "holdmsg.h"
#include "imagerc.h"
#include "util.h"

extern char **environ;

static int put_list(struct strv *buf, char *const *v)
{
	for (; v != NULL && *v != NULL; v++)
		if (strv_push(buf, *v) < 0)
			return -1;
	return strv_push(buf, "");
}

int hold_entry_env(struct agent_spec *s, char *const *own, struct strv *env, struct err *e)
{
	struct strv narrow = { 0 }, both = { 0 }, inherit = s->inherit;
	char num[16];
	int fd, rc;

	s->inherit = (struct strv){ 0 };
	rc = agentspec_worker_env(s, 0, own, &narrow, e);
	s->inherit = inherit;
	if (rc < 0)
		return -1;
	if (put_list(&both, narrow.v) < 0 || put_list(&both, env->v) < 0) {
		strv_free(&narrow);
		strv_free(&both);
		return err_sys(e, EXIT_CTRUN, "the entrypoint's environment");
	}
	/* Inherited by the entrypoint and the hold it execs. */
	fd = memfd_create("ctrun-hold-base", 0);
	rc = fd < 0 ? -1 : 0;
	for (size_t i = 0; rc == 0 && i < both.n; i++)
		rc = write_all(fd, both.v[i], strlen(both.v[i]) + 1);
	strv_free(&both);
	snprintf(num, sizeof(num), "%d", fd);
	if (rc < 0 || strv_setenv(&narrow, HOLD_BASE_ENV, num, 1) < 0) {
		if (fd >= 0)
			close(fd);
		strv_free(&narrow);
		return err_sys(e, EXIT_CTRUN, "the entrypoint's environment");
	}
	strv_free(env);
	*env = narrow;
	return 0;
}

/* Reads the next list of buf (see hold_entry_env) into out. */
static int get_list(const char **p, const char *end, struct strv *out)
{
	while (*p < end) {
		size_t n = strnlen(*p, (size_t)(end - *p));

		if (n == (size_t)(end - *p))
			return -1;
		if (n == 0) {
			(*p)++;
			return 0;
		}
		if (strv_pushn(out, *p, n) < 0)
			return -1;
		*p += n + 1;
	}
	return -1;
}

/* After the entrypoint: the hold's environment with the entrypoint's
 * changes (what it set, changed or unset against what it started from). */
static int entry_merge(const char *num)
{
	struct strv e0 = { 0 }, full = { 0 };
	size_t cap = 2 * (size_t)HOLD_TEXT_MAX + 2, len = 0;
	char *buf = malloc(cap), *end;
	const char *p;
	long fd = strtol(num, &end, 10);
	ssize_t n;

	if (buf == NULL || *num == '\0' || *end != '\0' || fd < 3 || fd > INT_MAX ||
	    lseek((int)fd, 0, SEEK_SET) < 0)
		goto bad;
	while ((n = read((int)fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close((int)fd);
	p = buf;
	if (n < 0 || get_list(&p, buf + len, &e0) < 0 || get_list(&p, buf + len, &full) < 0)
		goto bad;
	for (char **v = environ; *v != NULL; v++) {
		char *eq = strchr(*v, '=');

		if (eq == NULL || strncmp(*v, HOLD_BASE_ENV "=", sizeof(HOLD_BASE_ENV)) == 0 ||
		    strv_find(&e0, *v) >= 0)
			continue; /* unchanged by the entrypoint */
		*eq = '\0';
		n = strv_setenv(&full, *v, eq + 1, 1);
		*eq = '=';
		if (n < 0)
			goto bad;
	}
	for (size_t i = 0; i < e0.n; i++) {
		char *eq = strchr(e0.v[i], '=');

		if (eq == NULL)
			continue;
		*eq = '\0';
		n = getenv(e0.v[i]) == NULL ? strv_unsetenv(&full, e0.v[i]) : 0;
		if (n < 0)
			goto bad;
	}
	free(buf);
	strv_free(&e0);
	environ = strv_argv(&full); /* kept for the process's life */
	return 0;
bad:
	fprintf(stderr, "ctrun: agent --hold: %s: cannot read the environment the entrypoint "
		"started from\n", HOLD_BASE_ENV);
	free(buf);
	strv_free(&e0);
	strv_free(&full);
	return -1;
}

/* pyxis's rule: the hold (and so the tasks) starts where the image's
 * /etc/rc would cd, "/" without one (imagerc.h).  Read in the container,
 * as the container's user: a link in the image resolves inside it.  A
 * directory that is not there is said, and "/" taken (enroot's rc would
 * make it; the root may be read-only here). */
static void enter_image_workdir(void)
{
	char dir[PATH_MAX] = "/", *text = NULL;
	size_t len = 0;
	int fd = open_regular(IMAGERC_PATH, O_RDONLY, NULL);

	if (fd >= 0) {
		text = read_fd_max(fd, IMAGERC_MAX, &len);
		close(fd);
	}
	if (text == NULL || imagerc_workdir(text, len, dir, sizeof(dir)) != 1)
		strcpy(dir, "/");
	free(text);
	if (chdir(dir) < 0) {
		fprintf(stderr, "ctrun: warning: the image's working directory %s (its %s): %s; "
			"starting in /\n", dir, IMAGERC_PATH, strerror(errno));
		if (chdir("/") < 0)
			perror("ctrun: agent --hold: /");
	}
}

int hold_main(bool image_workdir)
{
	char line[64], cwd[PATH_MAX], buf[256];
	size_t total = 0;
	int len;

	/* Every signal of the step (Slurm signals each of its processes) is
	 * for the tasks: the container stays until the plugin lets it go. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			signal(sig, SIG_IGN);
	if (getenv(HOLD_BASE_ENV) != NULL && entry_merge(getenv(HOLD_BASE_ENV)) < 0)
		return EXIT_CTRUN;
	/* The batch step's srun (holdmsg.h): first on the PATH the tasks get. */
	if (access(AGENT_DIR "/" SRUN_BIN_DIR "/srun", F_OK) == 0) {
		const char *path = getenv("PATH");
		char *both = NULL;

		if (asprintf(&both, "%s/%s%s%s", AGENT_DIR, SRUN_BIN_DIR, path != NULL ? ":" : "",
			     path != NULL ? path : "") < 0 || setenv("PATH", both, 1) < 0) {
			perror("ctrun: agent --hold: PATH");
			return EXIT_CTRUN;
		}
		free(both);
	}
	if (image_workdir)
		enter_image_workdir();
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		perror("ctrun: agent --hold: working directory");
		return EXIT_CTRUN;
	}
	len = snprintf(line, sizeof(line), "%s%ld\n", HOLD_MAGIC, (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(line) || write_all(1, line, (size_t)len) < 0 ||
	    write_all(1, cwd, strlen(cwd) + 1) < 0)
		goto broken;
	for (char **v = environ; *v != NULL; v++) {
		size_t n = strlen(*v) + 1;

		total += n;
		if (total > HOLD_TEXT_MAX) {
			fprintf(stderr, "ctrun: agent --hold: the environment is over %u bytes\n",
				HOLD_TEXT_MAX);
			return EXIT_CTRUN;
		}
		if (write_all(1, *v, n) < 0)
			goto broken;
	}
	if (write_all(1, "", 1) < 0)
		goto broken;
	/* Held: until the plugin closes its end. */
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			return 0;
	}
broken:
	fprintf(stderr, "ctrun: agent --hold: cannot write to stdout (%s): ctrun __hold is the "
		"SPANK plugin's\n", strerror(errno));
	return EXIT_CTRUN;
}
