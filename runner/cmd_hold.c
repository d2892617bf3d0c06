/* cmd_hold.c - `ctrun __hold [OPTIONS]`: the container of one node and
 * step for the SPANK plugin (spank/, docs/slurm.md "The SPANK plugin").
 *
 * It is `ctrun shell` with a fixed command: the container set up as
 * `ctrun --image` sets it up, and the agent's exec mode running
 * `/.ctrun/agent --hold` in it with the environment a shell gets.  The
 * holding agent sends the plugin, on descriptor 0 (a socket), what the
 * tasks need to join the container (runner/agent/holdmsg.h) and holds it
 * until the plugin closes the socket; then everything is removed as after
 * any run, and --save writes the container's changes.  The tasks of the
 * step join it, so it is set up for the whole node (node mode: all the
 * step's GPUs on this node), never re-launched through srun, and under an
 * OCI runtime keeps the host's PID namespace (rt.h host_pid). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentspec.h"
#include "commands.h"
#include "container.h"
#include "holdmsg.h"
#include "imgsource.h"
#include "cache/named.h"
#include "topology.h"

extern char **environ;

/* The plugin's NAME:create: a kept container of that name is an error. */
#define CREATE_ENV "CTRUN_HOLD_NAME_CREATE"
/* The plugin's batch step: the script's srun is the host's (runner/agent/holdsrun_server.c). */
#define SRUN_ENV "CTRUN_HOLD_SRUN"
/* The plugin's default_workdir=image (pyxis's rule): the hold, and so the
 * tasks, start in the image's working directory (agent --image-workdir). */
#define WORKDIR_ENV "CTRUN_HOLD_WORKDIR"
/* The plugin, after a hold that was killed: PID's run directory removed,
 * nothing else done (spank/sphold.h sp_hold_reap). */
#define REAP_ENV "CTRUN_HOLD_REAP"

/* REAP_ENV's hold (killed: it could not remove its run directory). */
static int hold_reap(const struct options *o, const char *pid, const char *host,
		     struct err *e)
{
	struct topo t;
	char *end;
	long n;
	int rv;

	errno = 0;
	n = strtol(pid, &end, 10);
	if (errno != 0 || end == pid || *end != '\0' || n <= 1)
		return err_set(e, EXIT_USAGE, "%s=%s: not a process id", REAP_ENV, pid);
	/* The host name the hold wrote in its owner file. */
	if (topo_detect(o, environ, host, 0, &t, e) < 0)
		return -1;
	rv = ctr_reap_rundir(environ, t.host, n, e);
	topo_free(&t);
	return rv;
}

/* --name as pyxis's --container-name: a kept container of that name is
 * used whatever --image says (pyxis skips the import) and needs none; one
 * that is not there is made from --image. */
static int hold_name(struct options *o, const char *host, struct err *e)
{
	struct named_entry *v = NULL;
	struct cache_cfg cfg;
	char dir[PATH_MAX];
	const char *create = getenv(CREATE_ENV);
	size_t n = 0, i;
	int rv = -1;

	if (o->name == NULL)
		return 0;
	if (ctr_cache_cfg(o, &cfg, dir, sizeof(dir), e) < 0 || named_list(&cfg, &v, &n, e) < 0)
		return -1;
	for (i = 0; i < n && strcmp(v[i].name, o->name) != 0; i++)
		;
	if (i < n && create != NULL && strcmp(create, "1") == 0) {
		err_set(e, EXIT_USAGE, "--container-name %s:create: a container %s exists on %s "
			"(remove it: ctrun cache remove %s)", o->name, o->name, host, o->name);
	} else if (i < n) {
		free(o->image);
		o->image = strdup(v[i].image);
		rv = o->image != NULL ? 0 : err_sys(e, EXIT_CTRUN, "--name");
	} else if (o->image == NULL) {
		err_set(e, EXIT_USAGE, "--container-name %s: there is no container %s on %s, and no "
			"--container-image to make it from", o->name, o->name, host);
	} else {
		rv = 0;
	}
	free(v);
	return rv;
}

int cmd_hold(struct options *o, struct err *e)
{
	/* Slurm signals every process of the step: those are for the tasks.
	 * TERM and HUP still reach the runtime (run_fg), whose agent ignores
	 * them; only the plugin's end of the socket ends the hold. */
	static const int ignored[] = { SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGURG, SIGPIPE,
				       SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT };
	char host[256] = "localhost";
	struct ctr_setup c;
	struct topo t;
	pid_t srun = 0;
	int rv = -1;

	if (o->command.n > 0)
		return err_set(e, EXIT_USAGE, "__hold takes no command: the tasks that join its "
			       "container are the command");
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	if (getenv(REAP_ENV) != NULL)
		return hold_reap(o, getenv(REAP_ENV), host, e) < 0 ? -1 : 0;
	if (hold_name(o, host, e) < 0)
		return -1;
	if (o->image == NULL)
		return err_set(e, EXIT_USAGE, "__hold: no image (ctrun __hold --image IMG)");
	if (topo_detect(o, environ, host, 0, &t, e) < 0)
		return -1;
	/* One container for all the node's tasks: node mode, whatever the
	 * step's shape (a batch script's step included: never via srun). */
	t.mode = MODE_NODE;
	t.local_rank_base = 0;
	/* The step's tasks wait for this container: the quicker OCI runtime
	 * (crun), unless a bind is to be unbindable, which crun ignores (a path
	 * that merely contains the word costs only the quicker start). */
	o->start_fast = true;
	/* pyxis's home: the directory $HOME names (enroot's 10-home.sh). */
	o->home_env = true;
	for (size_t i = 0; i < o->mounts.n; i++)
		if (strstr(o->mounts.v[i], "unbindable") != NULL)
			o->start_fast = false;
	if (ctr_setup_init(&c, o, &t, environ, true, e) < 0)
		goto out;
	c.spec.host_pid = true;
	c.spec.tty = false;
	/* The batch step (the plugin says so): srun in the script is the host's. */
	if (!o->dry_run && getenv(SRUN_ENV) != NULL && strcmp(getenv(SRUN_ENV), "1") == 0 &&
	    (srun = hold_srun_start(c.rundir, e)) < 0)
		goto free;
	if (strv_push(&c.spec.argv, AGENT_BIN) < 0 || strv_push(&c.spec.argv, HOLD_ARG) < 0 ||
	    (getenv(WORKDIR_ENV) != NULL && strcmp(getenv(WORKDIR_ENV), "image") == 0 &&
	     strv_push(&c.spec.argv, HOLD_WORKDIR_ARG) < 0)) {
		err_sys(e, EXIT_CTRUN, "__hold");
		goto free;
	}
	rv = ctr_run_exec(&c, o, &t, environ, false, e);
	hold_srun_stop(srun);
	if (rv == 0 && !o->dry_run && o->save != NULL && ctr_save(&c, o->save, o->cache_compression,
							   o->quiet, e) < 0)
		rv = -1;
free:
	ctr_setup_free(&c);
out:
	topo_free(&t);
	return rv;
}
