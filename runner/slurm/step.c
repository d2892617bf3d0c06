/* step.c - fail-fast across nodes without a control channel of our own:
 * cancel our Slurm step with SIGURG.  Every ctrun of the step gets it and
 * stops its workers (exiting 0, so srun reports this node's status as the
 * step's); the workers themselves ignore SIGURG by default. */
#include "step.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void step_cancel(const struct topo *t)
{
	char step[160];
	pid_t pid;

	if (xsnprintf(step, sizeof(step), "%s.%s", t->job_id, t->step_id) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "scancel", "--quiet", "--signal=URG", step, NULL };
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0)
		return;
	/* scancel answers in milliseconds; never let a dead controller hold us. */
	for (int i = 0; i < 500; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

void step_cancel_cb(void *topo)
{
	step_cancel(topo);
}
