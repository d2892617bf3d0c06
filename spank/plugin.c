/* plugin.c - spank_ctrun.so: the SPANK callbacks, one per context
 * (docs/slurm.md "The SPANK plugin" has the table).
 *
 *   srun, sbatch, salloc   register the options, check every value: a bad
 *                          one fails the command at once, one line naming
 *                          the option
 *   slurmstepd user_init   `ctrun __hold ...` as the job's user: the node's
 *                          container for this step (sphold.h)
 *   each task's task_init  the torchrun contract (`ctrun env`), the
 *                          container's environment, then the task joins the
 *                          container (spjoin.h); Slurm execs its command there
 *   slurmstepd task_exit   after the node's last task: the hold ends, ctrun
 *                          removes what it made
 *
 * A job without --container-image or --container-name is not touched.
 * Nothing here exits slurmd or slurmstepd: a task that cannot join ends
 * itself with status 125 (ctrun's "failed before any worker started"). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "sparg.h"
#include "spconf.h"
#include "spenv.h"
#include "sphold.h"
#include "spjoin.h"
#include "spreg.h"
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

/* Slurm's ids of its special steps (slurm.h, not in spank.h). */
#define STEP_BATCH 0xfffffffbU
#define STEP_INTERACTIVE 0xfffffffaU
/* How long the node's last task waits for ctrun to clean up (and save). */
#define STOP_TIMEOUT 60
#define SAVE_TIMEOUT 1800

static struct {
	struct sp_conf conf;
	struct sp_args args;
	bool enabled;        /* remote: this step asked for a container */
	uid_t uid;
	gid_t gid;
	gid_t *gids;
	int ngids;
	uint32_t jobid, stepid, local_tasks, exited;
	struct strv given;   /* the environment ctrun __hold got */
	struct sp_hold hold;
	bool held;           /* the hold message came (or a running container was found) */
	bool attached;       /* the container is another step's (spreg.h) */
	struct err hold_err; /* why not (reported by the tasks) */
	struct strv set, unset; /* the container's changes to the environment */
	bool reg;            /* the node's running containers can be used (spreg.h) */
	char regname[128];   /* this step's container's name there */
	int regfd;           /* its record, locked while it runs; -1 = none */
} ctx = { .regfd = -1 };

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
		ctx.reg = rv == 0 && sp_reg_prepare(ctx.uid, &e) == 0;
		if (rv == 0 && !ctx.reg)
			slurm_info("ctrun: %s (no --container-name of running containers)", e.msg);
	}
	return rv;
}

/* slurmstepd runs user_init as the job's user (seteuid); the records of
 * running containers are root's (spreg.h): root's effective ids for the
 * length of one call.  -1 when they cannot be had or given back. */
static int as_root(int (*fn)(void *), void *arg, struct err *e)
{
	uid_t eu = geteuid();
	gid_t eg = getegid();
	int rv;

	if (eu != 0 && (seteuid(0) < 0 || setegid(0) < 0))
		return err_sys(e, EXIT_CTRUN, "the records of running containers: root's ids");
	rv = fn(arg);
	if (eu != 0 && (setegid(eg) < 0 || seteuid(eu) < 0)) {
		slurm_error("ctrun: cannot give back the job's ids after the records of running "
			    "containers: %s", strerror(errno));
		return err_sys(e, EXIT_CTRUN, "the job's ids");
	}
	return rv;
}

struct reg_call {
	struct sp_reg *r;
	struct err *e;
	int rv;
};

static int lookup_fn(void *arg)
{
	struct reg_call *c = arg;

	return c->rv = sp_reg_lookup(ctx.uid, ctx.regname, c->r, c->e);
}

static int publish_fn(void *arg)
{
	struct reg_call *c = arg;

	return c->rv = sp_reg_publish(ctx.uid, ctx.regname, c->r, c->e);
}

/* The name of this step's container among the node's running ones:
 * --container-name (per job with container_scope=job), else JOB.STEP, the
 * name pyxis gives an unnamed one. */
static int reg_name(void)
{
	int n = ctx.args.name == NULL ? snprintf(ctx.regname, sizeof(ctx.regname), "%u.%u",
						 ctx.jobid, ctx.stepid)
		: ctx.conf.scope_job ? snprintf(ctx.regname, sizeof(ctx.regname), "%u_%s", ctx.jobid,
						ctx.args.name)
				     : snprintf(ctx.regname, sizeof(ctx.regname), "%s", ctx.args.name);

	return n < 0 || (size_t)n >= sizeof(ctx.regname) ? -1 : 0;
}

/* A step that asked for --container-unshare and joins a running
 * container: each namespace it named must be the container's own (not
 * slurmstepd's, the node's), else it is refused as pyxis refuses it. */
static int check_unshared(void)
{
	static const struct {
		const char *name, *what;
		int fd;
	} ns[] = { { "net", "network", HOLD_FD_NET }, { "ipc", "IPC", HOLD_FD_IPC },
		   { "uts", "UTS", HOLD_FD_UTS } };
	char list[64];

	if (ctx.args.unshare == NULL)
		return 0;
	snprintf(list, sizeof(list), ",%s,", ctx.args.unshare);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++) {
		char word[8], self[32];
		struct stat a, b;

		snprintf(word, sizeof(word), ",%s,", ns[i].name);
		snprintf(self, sizeof(self), "/proc/self/ns/%s", ns[i].name);
		if (strstr(list, word) == NULL)
			continue;
		if (ctx.hold.fds[ns[i].fd] < 0 || fstat(ctx.hold.fds[ns[i].fd], &a) < 0 ||
		    stat(self, &b) < 0 || (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
			return err_set(&ctx.hold_err, EXIT_CTRUN, "error: --container-unshare=%s "
				       "requested but the container is not in a separate %s namespace "
				       "(--container-name %s runs without one: start it with "
				       "--container-unshare=%s, or use another name)", ns[i].name,
				       ns[i].what, ctx.args.name, ns[i].name);
	}
	return 0;
}

/* pyxis's check, in slurmstepd as the user, before a container is
 * started: a bind's absolute source that does not exist fails the step
 * with pyxis's line (other errors are ctrun's to report, as pyxis leaves
 * them to enroot). */
static int check_sources(void)
{
	struct stat st;

	for (size_t i = 0; i < ctx.args.sources.n; i++) {
		const char *src = ctx.args.sources.v[i];

		if (src[0] == '/' && stat(src, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
			return err_set(&ctx.hold_err, EXIT_CTRUN, "--container-mounts: source path "
				       "does not exist: %s", src);
	}
	return 0;
}

/* Another step's running container of that name: its record's changes
 * and working directory, its namespaces.  1 when joined, 0 when there is
 * none, -1 with ctx.hold_err. */
static int attach(void)
{
	struct sp_reg r;
	struct reg_call call = { &r, &ctx.hold_err, -1 };
	int found;

	if (ctx.args.name == NULL || strcmp(ctx.args.name_flags, "no_exec") == 0)
		return 0;
	found = as_root(lookup_fn, &call, &ctx.hold_err) < 0 ? -1 : call.rv;
	if (found == 0 && strcmp(ctx.args.name_flags, "exec") == 0)
		err_set(&ctx.hold_err, EXIT_CTRUN, "--container-name %s:exec: the container is not "
			"running on this node", ctx.args.name);
	if (found <= 0)
		return found == 0 && strcmp(ctx.args.name_flags, "exec") == 0 ? -1 : found;
	if (strcmp(ctx.args.name_flags, "create") == 0) {
		err_set(&ctx.hold_err, EXIT_CTRUN, "--container-name %s:create: the container exists "
			"(it is running on this node)", ctx.args.name);
		sp_reg_free(&r);
		return -1;
	}
	ctx.set = r.set;
	ctx.unset = r.unset;
	ctx.hold.cwd = r.cwd;
	memset(&r.set, 0, sizeof(r.set));
	memset(&r.unset, 0, sizeof(r.unset));
	r.cwd = NULL;
	found = sp_hold_open(&ctx.hold, r.pid, &ctx.hold_err) < 0 || check_unshared() < 0 ? -1 : 1;
	sp_reg_free(&r);
	return found;
}

/* ctrun __hold for this step; its changes to the environment kept, and the
 * container published among the node's running ones. */
static int start(spank_t sp)
{
	static const char *const locale[] = { "LANG", "LANGUAGE", "LC_ALL" };
	struct strv argv = { 0 }, henv = { 0 };
	char **jargv = NULL;
	int jargc = 0, rc;
	const char *script = NULL;
	struct sp_user u = { ctx.uid, ctx.gid, ctx.gids, ctx.ngids };
	struct sp_reg r = { 0 };
	/* Set in slurmstepd's own environment by the mpi/pmix plugin when it
	 * started the step's PMIx server (before user_init). */
	const char *pmix = getenv("PMIX_SERVER_TMPDIR");
	struct stat st;

	/* The batch script lives in slurmd's spool: bound into the container. */
	if (ctx.stepid == STEP_BATCH &&
	    spank_get_item(sp, S_JOB_ARGV, &jargc, &jargv) == ESPANK_SUCCESS && jargc > 0)
		script = jargv[0];
	rc = strv_push(&argv, ctx.conf.ctrun) | strv_push(&argv, "__hold");
	if (ctx.args.name != NULL)
		rc |= strv_push(&argv, "--name") | strv_push(&argv, ctx.regname);
	if (pmix != NULL && (pmix[0] != '/' || stat(pmix, &st) < 0 || !S_ISDIR(st.st_mode)))
		pmix = NULL;
	if (check_sources() < 0) {
		strv_free(&argv);
		return -1;
	}
	if (rc != 0 ||
	    sp_args_hold_argv(&ctx.args, &ctx.conf, script, pmix, &argv, &ctx.hold_err) < 0) {
		if (ctx.hold_err.msg[0] == '\0')
			err_sys(&ctx.hold_err, EXIT_CTRUN, "ctrun's arguments");
		strv_free(&argv);
		return -1;
	}
	if ((ctx.args.name != NULL && strcmp(ctx.args.name_flags, "create") == 0 &&
	     strv_setenv(&ctx.given, "CTRUN_HOLD_NAME_CREATE", "1", 1) < 0) ||
	    (ctx.stepid == STEP_BATCH && strv_setenv(&ctx.given, "CTRUN_HOLD_SRUN", "1", 1) < 0) ||
	    (ctx.args.workdir == NULL && ctx.conf.workdir_image
		     ? strv_setenv(&ctx.given, "CTRUN_HOLD_WORKDIR", "image", 1)
		     : strv_unsetenv(&ctx.given, "CTRUN_HOLD_WORKDIR")) < 0) {
		strv_free(&argv);
		return err_sys(&ctx.hold_err, EXIT_CTRUN, "environment");
	}
	/* pyxis drops the job's locale (LANG, LANGUAGE, LC_ALL: one the image
	 * may lack) unless --container-env names it: the container gets the
	 * image's, and the diff below unsets the job's in the tasks. */
	rc = strv_extend(&henv, ctx.given.v);
	for (size_t i = 0; rc == 0 && i < sizeof(locale) / sizeof(*locale); i++)
		if (strv_find(&ctx.args.env, locale[i]) < 0)
			rc = strv_unsetenv(&henv, locale[i]);
	if (rc < 0) {
		strv_free(&argv);
		strv_free(&henv);
		return err_sys(&ctx.hold_err, EXIT_CTRUN, "environment");
	}
	rc = sp_hold_start(&ctx.hold, argv.v, henv.v, &u, &ctx.hold_err);
	strv_free(&argv);
	strv_free(&henv);
	if (rc < 0)
		return -1;
	if (sp_env_diff(ctx.given.v, ctx.hold.env.v, &ctx.set, &ctx.unset) < 0)
		return err_sys(&ctx.hold_err, EXIT_CTRUN, "environment");
	/* Published for other steps (--container-name): not being able to is
	 * no reason to fail this one. */
	r = (struct sp_reg){ .pid = ctx.hold.agent, .start = sp_reg_starttime(ctx.hold.agent),
			     .cwd = ctx.hold.cwd, .set = ctx.set, .unset = ctx.unset };
	if (ctx.reg) {
		struct err e = { 0 };
		struct reg_call call = { &r, &e, -1 };

		ctx.regfd = as_root(publish_fn, &call, &e) < 0 ? -1 : call.rv;
		if (ctx.regfd < 0)
			slurm_info("ctrun: %s", e.msg);
	}
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	char **env = NULL;
	uint32_t nodeid, procid;
	int found;

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
	if (reg_name() < 0)
		ctx.reg = false;
	/* Errors of user_init do not reach srun (Slurm reports success): the
	 * tasks report them (task_init). */
	found = ctx.reg ? attach() : 0;
	if (found < 0)
		return 0;
	ctx.attached = found == 1;
	ctx.held = ctx.attached || start(sp) == 0;
	return 0;
}

/* ctrun's own lines ("ctrun: ..."), and the rest (the entrypoint's
 * output) with --container-entrypoint-log or when it failed. */
static void print_line(const char *line, void *arg)
{
	bool all = *(bool *)arg;

	if (all || strncmp(line, "ctrun: ", 7) == 0)
		slurm_spank_log("%s", line);
}

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
			sp_hold_log(&ctx.hold, print_line, &all);
			if (!said)
				slurm_error("ctrun: %s", ctx.hold_err.msg[0] ? ctx.hold_err.msg :
					    "the container did not start");
		}
		_exit(EXIT_CTRUN);
	}
	if (local == 0) {
		all = ctx.args.entrypoint_log == 1;
		sp_hold_log(&ctx.hold, print_line, &all);
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

static void stop_hold(void)
{
	bool all = true;
	int status;

	struct sp_user u = { ctx.uid, ctx.gid, ctx.gids, ctx.ngids };

	sp_reg_unpublish(ctx.uid, ctx.regname, ctx.regfd);
	ctx.regfd = -1;
	/* No task joins any more: the container's root and namespaces go
	 * before its hold ends (a named container's one root must not live
	 * on in slurmstepd once the hold's users' lock is released:
	 * runner/container/namedroot.h). */
	for (int i = 0; i < HOLD_NFDS; i++) {
		if (ctx.hold.fds[i] >= 0)
			close(ctx.hold.fds[i]);
		ctx.hold.fds[i] = -1;
	}
	if (ctx.hold.pid > 0) {
		status = sp_hold_stop(&ctx.hold, ctx.args.save != NULL ? SAVE_TIMEOUT : STOP_TIMEOUT);
		/* What went wrong at the end (a --container-save): slurmd's log. */
		if (status != 0 && ctx.held) {
			slurm_info("ctrun: ctrun __hold ended with status %d", status);
			sp_hold_log(&ctx.hold, print_line, &all);
		}
	}
	/* Killed (by Slurm's process tracking, a signal, our timeout), it
	 * could not remove its run directory: a ctrun does it now. */
	sp_hold_reap(&ctx.hold, ctx.conf.ctrun, &ctx.given, &u);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (ctx.enabled && spank_context() == S_CTX_REMOTE && ++ctx.exited >= ctx.local_tasks)
		stop_hold();
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	stop_hold();
	sp_hold_free(&ctx.hold);
	sp_args_free(&ctx.args);
	strv_free(&ctx.given);
	strv_free(&ctx.set);
	strv_free(&ctx.unset);
	free(ctx.gids);
	memset(&ctx, 0, sizeof(ctx));
	ctx.regfd = -1;
	return 0;
}
