/* appversion.c - which apptainer or singularity release a binary is (rt.h).
 *
 * The first line of `BIN --version` is "PACKAGE version X.Y.Z[-suffix]",
 * PACKAGE being apptainer's and SingularityCE's buildcfg.PACKAGE_NAME
 * ("apptainer", "singularity-ce"), or "singularity" for Sylabs' releases
 * before the fork (<= 3.7; 3.4.2 is what builds here).  apptainer's
 * `singularity` compatibility link answers "apptainer version ...". */
#include "apptainer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *number(const char *p, int *out)
{
	long v = 0;

	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9' && v < 100000)
		v = v * 10 + (*p++ - '0');
	*out = (int)v;
	return p;
}

void app_version_parse(const char *text, struct app_version *v)
{
	static const struct { const char *name; enum app_flavor flavor; } known[] = {
		{ "apptainer version ", APP_APPTAINER },
		{ "singularity-ce version ", APP_SINGULARITYCE },
		{ "singularity version ", APP_SINGULARITY },
	};
	const char *p = text;

	memset(v, 0, sizeof(*v));
	if (text == NULL)
		return;
	p += strspn(p, " \t\n");
	for (size_t i = 0; i < sizeof(known) / sizeof(*known); i++) {
		size_t n = strlen(known[i].name);
		struct app_version t = { known[i].flavor, 0, 0, 0 };

		if (strncmp(p, known[i].name, n) != 0)
			continue;
		p += n;
		if ((p = number(p, &t.major)) == NULL || *p++ != '.' ||
		    (p = number(p, &t.minor)) == NULL)
			return;
		if (*p == '.' && number(p + 1, &t.patch) == NULL)
			return;
		*v = t;
		return;
	}
}

const char *app_version_name(const struct app_version *v, char *buf, size_t size)
{
	static const char *const names[] = { "", "apptainer", "SingularityCE", "Singularity" };

	if (v->flavor == APP_UNKNOWN)
		snprintf(buf, size, "an unknown version");
	else
		snprintf(buf, size, "%s %d.%d.%d", names[v->flavor], v->major, v->minor, v->patch);
	return buf;
}

static bool at_least(const struct app_version *v, int major, int minor)
{
	return v->major > major || (v->major == major && v->minor >= minor);
}

bool app_has_mount(const struct app_version *v)
{
	return (v->flavor == APP_APPTAINER && at_least(v, 1, 0)) ||
	       (v->flavor == APP_SINGULARITYCE && at_least(v, 3, 9));
}

bool app_has_no_oci(const struct app_version *v)
{
	return v->flavor == APP_SINGULARITYCE && at_least(v, 4, 0);
}

void app_version_run(const char *bin, struct app_version *v)
{
	char buf[4096];
	size_t len = 0;
	int pfd[2], ws;
	pid_t pid;

	memset(v, 0, sizeof(*v));
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)bin, "--version", NULL };
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0 ||
		    dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(bin, argv);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return;
	}
	for (int waited = 0; len < sizeof(buf) - 1 && waited < 5000;) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&pf, 1, 100);
		ssize_t n;

		if (r == 0) {
			waited += 100;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		n = r < 0 ? -1 : read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(pfd[0]);
	kill(pid, SIGKILL); /* gone already, or hung past the limit */
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	app_version_parse(buf, v);
}
