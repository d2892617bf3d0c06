/* workerexec.h - the forked worker, up to execve: its own process group,
 * death with ctrun, stdio, default signals, CPU affinity; a failed exec
 * says why in one line and exits 126/127.  Async-signal-safe only. */
#ifndef CTRUN_WORKEREXEC_H
#define CTRUN_WORKEREXEC_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* Makes pgid the terminal's foreground process group (SIGTTOU blocked). */
void set_foreground(pid_t pgid);

/* What the child becomes: struct worker's fields (supervise.h). */
struct worker_image {
	long rank;
	char *const *argv;
	char *const *envp;      /* NULL = environ */
	const cpu_set_t *cpus;  /* NULL = inherited */
};

/* In the child of parent: becomes w (stdin from devnull when >= 0, stdout
 * and stderr to outw/errw when >= 0, mask as its signal mask). */
__attribute__((noreturn)) void worker_exec(const struct worker_image *w, pid_t parent, bool fg,
					   int devnull, const sigset_t *mask, int outw, int errw);

#endif
