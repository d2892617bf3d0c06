/* holdmsg.c - ctrun-agent --hold: the container of `ctrun __hold` tells
 * the SPANK plugin how to join it, then holds it (holdmsg.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentspec.h"
#include "err.h"
#include "holdmsg.h"
#include "util.h"

extern char **environ;

int hold_main(void)
{
	char line[64], cwd[PATH_MAX], buf[256];
	size_t total = 0;
	int len;

	/* Every signal of the step (Slurm signals each of its processes) is
	 * for the tasks: the container stays until the plugin lets it go. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			signal(sig, SIG_IGN);
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
