/* plugin.c - spank_ctrun.so: the SPANK callbacks, one per context
 * (docs/slurm.md "The SPANK plugin" has the table).
 *
 *   srun, sbatch, salloc   register the options, check every value: a bad
 *                          one fails the command at once, one line naming
 *                          the option
 *   slurmstepd user_init   the node's container for this step: another
 *                          step's running one of its --container-name, or
 *                          `ctrun __hold ...` as the job's user
 *                          (spcontainer.h)
 *   each task's task_init  the torchrun contract (`ctrun env`), the
 *                          container's environment, then the task joins the
 *                          container (spjoin.h); Slurm execs its command there
 *   slurmstepd task_exit   after the node's last task: the hold ends, ctrun
 *                          removes what it made (spcontainer.h)
 *
 * A job without --container-image or --container-name is not touched.
 * Nothing here exits slurmd or slurmstepd: a task that cannot join ends
 * itself with status 125 (ctrun's "failed before any worker started"). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "spconf.h"
#include "spcontainer.h"
#include "spenv.h"
#include "sphold.h"
#include "spjoin.h"
#include "spoptions.h"
#include "sprunning.h"
#include "util.h"

/* The symbols Slurm looks up; spank/spank_ctrun.map hides every other. */
SPANK_PLUGIN(ctrun, 1)

#ifdef SPANK_SLURM_API
/* At load, before Slurm's own check refuses a plugin of another release
 * ("Incompatible Slurm plugin version"): one line saying which Slurm it
 * was built for and what to do.  slurm_api_version() is libslurm's (and
 * libslurmfull's, in slurmd and slurmstepd): its major is the soname. */
__attribute__((constructor)) static void release_check(void)
{
	long (*api)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "slurm_api_version");
	long v = api != NULL ? api() : -1;

	if (v >= 0 && (v >> 16) != SPANK_SLURM_API)
		fprintf(stderr, "spank_ctrun.so: built for Slurm %d.%02d (libslurm.so.%d), this is a "
			"Slurm with libslurm.so.%ld: Slurm refuses it; rebuild it against this Slurm's "
			"<slurm/spank.h> (make SLURM_INCLUDE=PREFIX/include) and install that one\n",
			SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			SPANK_SLURM_API, v >> 16);
}
#endif

/* This step, as this process knows it (spcontainer.h). */
static struct sp_step ctx = { .recfd = -1 };

static struct spank_option options[32];

static int option_cb(int val, const char *optarg, int remote)
{
	struct err e = { 0 };

	(void)remote;
	if (sp_args_set(&ctx.args, (enum sp_opt)(val / 2), val % 2, optarg, &e) < 0) {
		slurm_error("ctrun: %s", e.msg);
		return -1;
	}
	return 0;
}

static int register_options(spank_t sp)
{
	for (unsigned i = 0; i < sp_noptdescs && i < sizeof(options) / sizeof(*options); i++) {
		const struct sp_optdesc *d = &sp_optdescs[i];
		spank_err_t rc;

		options[i] = (struct spank_option){ (char *)d->name, (char *)d->arginfo,
						    (char *)d->usage, d->arginfo != NULL,
						    (int)d->opt * 2 + d->val, option_cb };
		rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("ctrun: cannot register --%s: %s", d->name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t where = spank_context();
	struct err e = { 0 };

	sp_args_init(&ctx.args);
	sp_hold_init(&ctx.hold);
	if (sp_conf_parse(&ctx.conf, ac, av, &e) < 0) {
		slurm_error("ctrun: %s", e.msg);
		return -1;
	}
	switch (where) {
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
		return register_options(sp);
	case S_CTX_ALLOCATOR:
		return ctx.conf.sbatch_support ? register_options(sp) : 0;
	default:
		return 0;
	}
}

static const char *local_getenv(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

static const char *remote_getenv(const char *name, void *arg)
{
	static char buf[PATH_MAX];

	return spank_getenv(arg, name, buf, sizeof(buf)) == ESPANK_SUCCESS ? buf : NULL;
}

/* Who the job is, for ctrun __hold and the task count for the end. */
static int job_info(spank_t sp)
{
	gid_t *gids = NULL;
	int ngids = 0;

	if (spank_get_item(sp, S_JOB_UID, &ctx.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &ctx.gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &ctx.jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ctx.stepid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ctx.local_tasks) != ESPANK_SUCCESS) {
		slurm_error("ctrun: cannot read the job's user, step and task count");
		return -1;
	}
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) == ESPANK_SUCCESS &&
	    ngids > 0 && gids != NULL) {
		ctx.gids = calloc((size_t)ngids, sizeof(*gids));
		if (ctx.gids == NULL)
			return -1;
		memcpy(ctx.gids, gids, (size_t)ngids * sizeof(*gids));
		ctx.ngids = ngids;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t where = spank_context();
	struct strv notes = { 0 };
	struct err e = { 0 };
	bool remote = where == S_CTX_REMOTE;
	int rv = 0;

	(void)ac;
	(void)av;
	if (where != S_CTX_LOCAL && where != S_CTX_ALLOCATOR && !remote)
		return 0;
	if (where == S_CTX_ALLOCATOR && !ctx.conf.sbatch_support)
		return 0;
	if (sp_args_env(&ctx.args, remote ? remote_getenv : local_getenv, sp, &e) < 0 ||
	    sp_args_check(&ctx.args, &e) < 0) {
		slurm_error("ctrun: %s", e.msg);
		return -1;
	}
	ctx.enabled = sp_args_enabled(&ctx.args, &notes);
	for (size_t i = 0; !remote && i < notes.n; i++)
		slurm_info("ctrun: %s", notes.v[i]);
	strv_free(&notes);
	if (remote && ctx.enabled) {
		rv = job_info(sp);
		/* As root, once: the user's directory of running containers,
		 * the node's stale ones removed. */
		ctx.records = rv == 0 && sp_running_prepare(ctx.uid, &e) == 0;
		if (rv == 0 && !ctx.records)
			slurm_info("ctrun: %s (no --container-name of running containers)", e.msg);
	}
	return rv;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	char **env = NULL;
	uint32_t nodeid, procid;

	(void)ac;
	(void)av;
	if (!ctx.enabled || spank_context() != S_CTX_REMOTE)
		return 0;
	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || strv_extend(&ctx.given, env) < 0) {
		err_set(&ctx.hold_err, EXIT_CTRUN, "cannot read the job's environment");
		return 0;
	}
	/* The hold pulls as the node's first task would: that task's place
	 * in the step, which slurmstepd gives the tasks only, for the one
	 * pull per job (docs/images.md "A job pulls once"). */
	if (spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, 0U, &procid) == ESPANK_SUCCESS) {
		char v[16], w[16];

		snprintf(v, sizeof(v), "%u", nodeid);
		snprintf(w, sizeof(w), "%u", procid);
		if (strv_setenv(&ctx.given, "SLURM_NODEID", v, 0) < 0 ||
		    strv_setenv(&ctx.given, "SLURM_PROCID", w, 0) < 0 ||
		    strv_setenv(&ctx.given, "SLURM_LOCALID", "0", 0) < 0) {
			err_sys(&ctx.hold_err, EXIT_CTRUN, "environment");
			return 0;
		}
	}
	sp_container_open(&ctx, sp);
	return 0;
}

/* For sp_hold_log: whether ctrun said a line of its own. */
static void count_ctrun_lines(const char *line, void *arg)
{
	if (strncmp(line, "ctrun: ", 7) == 0)
		*(bool *)arg = true;
}

/* `ctrun env --mode task` in this task's environment: the torchrun
 * contract, exactly ctrun's (spenv.h).  A warning and none when it fails:
 * a step that is no training job still runs. */
static void contract(spank_t sp, struct strv *out)
{
	char **env = NULL, *text;
	size_t len;
	int pfd[2], ws = 0;
	pid_t pid;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || pipe2(pfd, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char *const argv[] = { ctx.conf.ctrun, "env", "--mode", "task", NULL };

		if (dup2(pfd[1], 1) == 1)
			execve(argv[0], argv, env);
		_exit(127);
	}
	close(pfd[1]);
	text = pid > 0 ? read_fd_max(pfd[0], 1u << 20, &len) : NULL;
	close(pfd[0]);
	if (pid > 0)
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
	if (pid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && text != NULL)
		sp_env_lines(text, out);
	else
		slurm_spank_log("ctrun: warning: no torchrun variables (RANK, WORLD_SIZE, "
				"MASTER_ADDR...) in this task: `%s env --mode task` failed "
				"(its error is above)", ctx.conf.ctrun);
	free(text);
}

/* The task's environment: the container's changes, the contract, PWD. */
static int task_env(spank_t sp, const char *pwd)
{
	struct strv set = { 0 }, unset = { 0 }, tr = { 0 };
	int rv = -1;

	if (strv_extend(&set, ctx.set.v) < 0 || strv_extend(&unset, ctx.unset.v) < 0)
		goto out;
	if (ctx.conf.torchrun_env && ctx.stepid != STEP_BATCH && ctx.stepid != STEP_INTERACTIVE)
		contract(sp, &tr);
	if (strv_extend(&set, tr.v) < 0)
		goto out;
	for (size_t i = 0; i < unset.n; i++)
		spank_unsetenv(sp, unset.v[i]);
	for (size_t i = 0; i < set.n; i++) {
		char *eq = strchr(set.v[i], '=');

		*eq = '\0';
		if (spank_setenv(sp, set.v[i], eq + 1, 1) != ESPANK_SUCCESS) {
			slurm_error("ctrun: cannot set %s in the task's environment", set.v[i]);
			goto out;
		}
	}
	if (pwd != NULL && spank_setenv(sp, "PWD", pwd, 1) != ESPANK_SUCCESS)
		goto out;
	rv = 0;
out:
	strv_free(&set);
	strv_free(&unset);
	strv_free(&tr);
	return rv;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct err e = { 0 };
	bool all = true;
	int local = -1;
	char cwd[PATH_MAX], own[PATH_MAX];
	const char *dir = ctx.args.workdir != NULL ? ctx.args.workdir : ctx.hold.cwd;

	(void)ac;
	(void)av;
	if (!ctx.enabled)
		return 0;
	spank_get_item(sp, S_TASK_ID, &local);
	if (!ctx.held) {
		/* One report per node, its first task's: ctrun's own line when
		 * it said why, else the plugin's. */
		if (local == 0) {
			bool said = false;

			sp_hold_log(&ctx.hold, count_ctrun_lines, &said);
			sp_hold_log(&ctx.hold, sp_container_print, &all);
			if (!said)
				slurm_error("ctrun: %s", ctx.hold_err.msg[0] ? ctx.hold_err.msg :
					    "the container did not start");
		}
		_exit(EXIT_CTRUN);
	}
	if (local == 0) {
		all = ctx.args.entrypoint_log == 1;
		sp_hold_log(&ctx.hold, sp_container_print, &all);
		if (ctx.attached && ctx.args.mounts.n > 0)
			slurm_spank_log("ctrun: ignoring --container-mounts when attaching to a running "
					"container");
	}
	/* --container-workdir: entered by the task, relative to the root, as
	 * pyxis's task does; else the holding agent's: the image's working
	 * directory (default_workdir=image, pyxis's rule), or srun's directory
	 * (default_workdir=srun) when this step started the container.  With
	 * srun's rule, a step that joins another's starts in its own srun's
	 * directory (never where the other step's processes went), or the
	 * container's when the container has no such directory. */
	if (ctx.attached && ctx.args.workdir == NULL && !ctx.conf.workdir_image &&
	    getcwd(own, sizeof(own)) != NULL)
		dir = own;
	if (task_env(sp, dir == ctx.hold.cwd ? ctx.hold.cwd : NULL) < 0 ||
	    sp_join(ctx.hold.fds, dir, dir == own ? ctx.hold.cwd : NULL, &e) < 0) {
		if (e.msg[0] != '\0')
			slurm_error("ctrun: %s", e.msg);
		_exit(EXIT_CTRUN);
	}
	if (dir != ctx.hold.cwd && getcwd(cwd, sizeof(cwd)) != NULL)
		spank_setenv(sp, "PWD", cwd, 1);
	return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (ctx.enabled && spank_context() == S_CTX_REMOTE && ++ctx.exited >= ctx.local_tasks)
		sp_container_stop(&ctx);
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	sp_container_stop(&ctx);
	sp_hold_free(&ctx.hold);
	sp_args_free(&ctx.args);
	strv_free(&ctx.given);
	strv_free(&ctx.set);
	strv_free(&ctx.unset);
	free(ctx.gids);
	memset(&ctx, 0, sizeof(ctx));
	ctx.recfd = -1;
	return 0;
}
