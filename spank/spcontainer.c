/* spcontainer.c - this step's container on the node (spcontainer.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spcontainer.h"
#include "spenv.h"
#include "sprunning.h"

/* How long the node's last task waits for ctrun to clean up (and save). */
#define STOP_TIMEOUT 60
#define SAVE_TIMEOUT 1800

/* slurmstepd runs user_init as the job's user (seteuid); the records of
 * running containers are root's (sprunning.h): root's effective ids for the
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

struct record_call {
	struct sp_step *s;
	struct sp_running *r;
	struct err *e;
	int rv;
};

static int lookup_fn(void *arg)
{
	struct record_call *c = arg;

	return c->rv = sp_running_lookup(c->s->uid, c->s->recname, c->r, c->e);
}

static int publish_fn(void *arg)
{
	struct record_call *c = arg;

	return c->rv = sp_running_publish(c->s->uid, c->s->recname, c->r, c->e);
}

/* The name of this step's container among the node's running ones:
 * --container-name (per job with container_scope=job), else JOB.STEP, the
 * name pyxis gives an unnamed one. */
static int record_name(struct sp_step *s)
{
	int n = s->args.name == NULL ? snprintf(s->recname, sizeof(s->recname), "%u.%u",
						 s->jobid, s->stepid)
		: s->conf.scope_job ? snprintf(s->recname, sizeof(s->recname), "%u_%s", s->jobid,
						s->args.name)
				     : snprintf(s->recname, sizeof(s->recname), "%s", s->args.name);

	return n < 0 || (size_t)n >= sizeof(s->recname) ? -1 : 0;
}

/* A step that asked for --container-unshare and joins a running
 * container: each namespace it named must be the container's own (not
 * slurmstepd's, the node's), else it is refused as pyxis refuses it. */
static int check_unshared(struct sp_step *s)
{
	static const struct {
		const char *name, *what;
		int fd;
	} ns[] = { { "net", "network", HOLD_FD_NET }, { "ipc", "IPC", HOLD_FD_IPC },
		   { "uts", "UTS", HOLD_FD_UTS } };
	char list[64];

	if (s->args.unshare == NULL)
		return 0;
	snprintf(list, sizeof(list), ",%s,", s->args.unshare);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++) {
		char word[8], self[32];
		struct stat a, b;

		snprintf(word, sizeof(word), ",%s,", ns[i].name);
		snprintf(self, sizeof(self), "/proc/self/ns/%s", ns[i].name);
		if (strstr(list, word) == NULL)
			continue;
		if (s->hold.fds[ns[i].fd] < 0 || fstat(s->hold.fds[ns[i].fd], &a) < 0 ||
		    stat(self, &b) < 0 || (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
			return err_set(&s->hold_err, EXIT_CTRUN, "error: --container-unshare=%s "
				       "requested but the container is not in a separate %s namespace "
				       "(--container-name %s runs without one: start it with "
				       "--container-unshare=%s, or use another name)", ns[i].name,
				       ns[i].what, s->args.name, ns[i].name);
	}
	return 0;
}

/* pyxis's check, in slurmstepd as the user, before a container is
 * started: a bind's absolute source that does not exist fails the step
 * with pyxis's line (other errors are ctrun's to report, as pyxis leaves
 * them to enroot). */
static int check_sources(struct sp_step *s)
{
	struct stat st;

	for (size_t i = 0; i < s->args.sources.n; i++) {
		const char *src = s->args.sources.v[i];

		if (src[0] == '/' && stat(src, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
			return err_set(&s->hold_err, EXIT_CTRUN, "--container-mounts: source path "
				       "does not exist: %s", src);
	}
	return 0;
}

/* Another step's running container of that name: its record's changes
 * and working directory, its namespaces.  1 when joined, 0 when there is
 * none, -1 with s->hold_err. */
static int attach(struct sp_step *s)
{
	struct sp_running r;
	struct record_call call = { s, &r, &s->hold_err, -1 };
	int found;

	if (s->args.name == NULL || strcmp(s->args.name_flags, "no_exec") == 0)
		return 0;
	found = as_root(lookup_fn, &call, &s->hold_err) < 0 ? -1 : call.rv;
	if (found == 0 && strcmp(s->args.name_flags, "exec") == 0)
		err_set(&s->hold_err, EXIT_CTRUN, "--container-name %s:exec: the container is not "
			"running on this node", s->args.name);
	if (found <= 0)
		return found == 0 && strcmp(s->args.name_flags, "exec") == 0 ? -1 : found;
	if (strcmp(s->args.name_flags, "create") == 0) {
		err_set(&s->hold_err, EXIT_CTRUN, "--container-name %s:create: the container exists "
			"(it is running on this node)", s->args.name);
		sp_running_free(&r);
		return -1;
	}
	s->set = r.set;
	s->unset = r.unset;
	s->hold.cwd = r.cwd;
	memset(&r.set, 0, sizeof(r.set));
	memset(&r.unset, 0, sizeof(r.unset));
	r.cwd = NULL;
	found = sp_hold_open(&s->hold, r.pid, &s->hold_err) < 0 || check_unshared(s) < 0 ? -1 : 1;
	sp_running_free(&r);
	return found;
}

/* ctrun __hold for this step; its changes to the environment kept, and the
 * container published among the node's running ones. */
static int start(struct sp_step *s, spank_t sp)
{
	static const char *const locale[] = { "LANG", "LANGUAGE", "LC_ALL" };
	struct strv argv = { 0 }, henv = { 0 };
	char **jargv = NULL;
	int jargc = 0, rc;
	const char *script = NULL;
	struct sp_user u = { s->uid, s->gid, s->gids, s->ngids };
	struct sp_running r = { 0 };
	/* Set in slurmstepd's own environment by the mpi/pmix plugin when it
	 * started the step's PMIx server (before user_init). */
	const char *pmix = getenv("PMIX_SERVER_TMPDIR");
	struct stat st;

	/* The batch script lives in slurmd's spool: bound into the container. */
	if (s->stepid == STEP_BATCH &&
	    spank_get_item(sp, S_JOB_ARGV, &jargc, &jargv) == ESPANK_SUCCESS && jargc > 0)
		script = jargv[0];
	rc = strv_push(&argv, s->conf.ctrun) | strv_push(&argv, "__hold");
	if (s->args.name != NULL)
		rc |= strv_push(&argv, "--name") | strv_push(&argv, s->recname);
	if (pmix != NULL && (pmix[0] != '/' || stat(pmix, &st) < 0 || !S_ISDIR(st.st_mode)))
		pmix = NULL;
	if (check_sources(s) < 0) {
		strv_free(&argv);
		return -1;
	}
	if (rc != 0 ||
	    sp_args_hold_argv(&s->args, &s->conf, script, pmix, &argv, &s->hold_err) < 0) {
		if (s->hold_err.msg[0] == '\0')
			err_sys(&s->hold_err, EXIT_CTRUN, "ctrun's arguments");
		strv_free(&argv);
		return -1;
	}
	if ((s->args.name != NULL && strcmp(s->args.name_flags, "create") == 0 &&
	     strv_setenv(&s->given, "CTRUN_HOLD_NAME_CREATE", "1", 1) < 0) ||
	    (s->stepid == STEP_BATCH && strv_setenv(&s->given, "CTRUN_HOLD_SRUN", "1", 1) < 0) ||
	    (s->args.workdir == NULL && s->conf.workdir_image
		     ? strv_setenv(&s->given, "CTRUN_HOLD_WORKDIR", "image", 1)
		     : strv_unsetenv(&s->given, "CTRUN_HOLD_WORKDIR")) < 0) {
		strv_free(&argv);
		return err_sys(&s->hold_err, EXIT_CTRUN, "environment");
	}
	/* pyxis drops the job's locale (LANG, LANGUAGE, LC_ALL: one the image
	 * may lack) unless --container-env names it: the container gets the
	 * image's, and the diff below unsets the job's in the tasks. */
	rc = strv_extend(&henv, s->given.v);
	for (size_t i = 0; rc == 0 && i < sizeof(locale) / sizeof(*locale); i++)
		if (strv_find(&s->args.env, locale[i]) < 0)
			rc = strv_unsetenv(&henv, locale[i]);
	if (rc < 0) {
		strv_free(&argv);
		strv_free(&henv);
		return err_sys(&s->hold_err, EXIT_CTRUN, "environment");
	}
	rc = sp_hold_start(&s->hold, argv.v, henv.v, &u, &s->hold_err);
	strv_free(&argv);
	strv_free(&henv);
	if (rc < 0)
		return -1;
	if (sp_env_diff(s->given.v, s->hold.env.v, &s->set, &s->unset) < 0)
		return err_sys(&s->hold_err, EXIT_CTRUN, "environment");
	/* Published for other steps (--container-name): not being able to is
	 * no reason to fail this one. */
	r = (struct sp_running){ .pid = s->hold.agent,
				 .start = sp_running_starttime(s->hold.agent),
				 .cwd = s->hold.cwd, .set = s->set, .unset = s->unset };
	if (s->records) {
		struct err e = { 0 };
		struct record_call call = { s, &r, &e, -1 };

		s->recfd = as_root(publish_fn, &call, &e) < 0 ? -1 : call.rv;
		if (s->recfd < 0)
			slurm_info("ctrun: %s", e.msg);
	}
	return 0;
}

void sp_container_open(struct sp_step *s, spank_t sp)
{
	int found;

	if (record_name(s) < 0)
		s->records = false;
	/* Errors of user_init do not reach srun (Slurm reports success): the
	 * tasks report them (task_init). */
	found = s->records ? attach(s) : 0;
	if (found < 0)
		return;
	s->attached = found == 1;
	s->held = s->attached || start(s, sp) == 0;
}

/* ctrun's own lines ("ctrun: ..."), and the rest (the entrypoint's
 * output) with --container-entrypoint-log or when it failed. */
void sp_container_print(const char *line, void *all)
{
	if (*(bool *)all || strncmp(line, "ctrun: ", 7) == 0)
		slurm_spank_log("%s", line);
}

void sp_container_stop(struct sp_step *s)
{
	bool all = true;
	int status;

	struct sp_user u = { s->uid, s->gid, s->gids, s->ngids };

	sp_running_unpublish(s->uid, s->recname, s->recfd);
	s->recfd = -1;
	/* No task joins any more: the container's root and namespaces go
	 * before its hold ends (a named container's one root must not live
	 * on in slurmstepd once the hold's users' lock is released:
	 * runner/container/namedroot.h). */
	for (int i = 0; i < HOLD_NFDS; i++) {
		if (s->hold.fds[i] >= 0)
			close(s->hold.fds[i]);
		s->hold.fds[i] = -1;
	}
	if (s->hold.pid > 0) {
		status = sp_hold_stop(&s->hold, s->args.save != NULL ? SAVE_TIMEOUT : STOP_TIMEOUT);
		/* What went wrong at the end (a --container-save): slurmd's log. */
		if (status != 0 && s->held) {
			slurm_info("ctrun: ctrun __hold ended with status %d", status);
			sp_hold_log(&s->hold, sp_container_print, &all);
		}
	}
	/* Killed (by Slurm's process tracking, a signal, our timeout), it
	 * could not remove its run directory: a ctrun does it now. */
	sp_hold_reap(&s->hold, s->conf.ctrun, &s->given, &u);
}
