/* setup.c - everything about one container that does not depend on
 * the workers: the image and its runtime, the root file system (node cache,
 * enroot's data directory), the mounts and their destinations inside the
 * image, GPU passthrough, and ctrun's run directory (see container.h). */
#include "container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentspec.h"
#include "cache.h"
#include "drivers.h"
#include "gpu_pin.h"
#include "imgconfig.h"
#include "imgmount.h"
#include "launch.h"
#include "phase.h"
#include "privdir.h"
#include "rootpath.h"
#include "stage.h"
#include "strv.h"
#include "util.h"

/* Our own directory under TMPDIR (Slurm often points it at a job-private
 * node-local directory), else $XDG_RUNTIME_DIR (the user's own, per node),
 * else /tmp, where a name another user took first costs nothing
 * (privdir_default): 0700 and ours. */
static int base_dir(char *const *envp, char *out, size_t size, struct err *e)
{
	const char *tmp = envp_get(envp, "TMPDIR"), *xdg = envp_get(envp, "XDG_RUNTIME_DIR");
	char name[32];
	struct stat st;

	if (tmp == NULL || tmp[0] != '/' || stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode)) {
		tmp = "/tmp";
		if (xdg != NULL && xdg[0] == '/' && lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && (st.st_mode & 077) == 0) {
			/* It holds the workers' environment: no one else may read it. */
			if (xsnprintf(out, size, "%s/ctrun", xdg) < 0)
				return err_set(e, EXIT_CTRUN, "XDG_RUNTIME_DIR too long");
			if (privdir_make(out, PRIVDIR_UNREADABLE, e) < 0)
				return err_wrap(e, "run directory");
			return 0;
		}
	}
	if (xsnprintf(name, sizeof(name), "ctrun-%u", (unsigned)geteuid()) < 0)
		return err_set(e, EXIT_CTRUN, "run directory name too long");
	if (privdir_default(tmp, name, out, size, e) < 0)
		return err_wrap(e, "run directory");
	return 0;
}

/* A share of this host (share-JOB.STEP-HOST-IMAGEID.lock or .sock): its
 * path without the suffix into share, or false. */
static bool share_of_host(const char *base, const char *name, const char *host, char *share,
			  size_t size)
{
	size_t len = strlen(name), hl = strlen(host);
	const char *dash;

	if (strncmp(name, "share-", 6) != 0 || len < 5 ||
	    (strcmp(name + len - 5, ".lock") != 0 && strcmp(name + len - 5, ".sock") != 0) ||
	    xsnprintf(share, size, "%s/%.*s", base, (int)(len - 5), name) < 0)
		return false;
	/* The host is the part before the last '-' (the image id has none). */
	dash = strrchr(share, '-');
	return dash != NULL && (size_t)(dash - share) > hl && dash[-(ptrdiff_t)hl - 1] == '-' &&
	       memcmp(dash - hl, host, hl) == 0;
}

/* Run directories of ctruns of this host that died (kill -9) without
 * removing theirs: each holds "HOST PID" in its owner file.  And the
 * rendezvous of a task-mode holder whose starter died (holder_share_gc
 * knows when nobody is there any more). */
static void gc_rundirs(const char *base, const char *host)
{
	DIR *d = opendir(base);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX], *text, h[256];
		long pid;

		if (share_of_host(base, de->d_name, host, path, sizeof(path))) {
			holder_share_gc(path);
			continue;
		}
		if (strncmp(de->d_name, "ctrun-", 6) != 0 ||
		    xsnprintf(path, sizeof(path), "%s/%s/owner", base, de->d_name) < 0)
			continue;
		text = read_file(path, NULL);
		if (text == NULL)
			continue;
		if (sscanf(text, "%255s %ld", h, &pid) == 2 && strcmp(h, host) == 0 && pid > 0 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
		    xsnprintf(path, sizeof(path), "%s/%s", base, de->d_name) >= 0)
			remove_tree(path);
		free(text);
	}
	closedir(d);
}

/* The image's root file system on this node (ctrroot.h decides, imgsource.c
 * makes it), into the spec. */
static int rootfs(struct ctr_setup *c, const struct options *o, char *const *envp, struct err *e)
{
	struct ctr_root_req q = { .image = c->image, .kind = c->spec.kind,
				  .need = ctr_root_need(c->spec.rt), .bin = c->bin,
				  .rundir = c->rundir, .rundir_made = &c->rundir_made,
				  .share = c->share, .root = !c->spec.rootless, .o = o, .envp = envp };

	if (ctr_root_prepare(&q, &c->root, e) < 0)
		return -1;
	ctr_root_spec(&c->root, &c->spec);
	return 0;
}

static int add_user_mounts(struct ctr_setup *c, const struct options *o, const char *cwd,
			   struct err *e)
{
	for (size_t i = 0; i < o->mounts.n; i++) {
		struct ctr_mount m;

		if (mount_parse(o->mounts.v[i], cwd, &m, e) < 0)
			return -1;
		if (mount_check_source(&m, e) < 0 ||
		    mounts_add_copy(&c->spec.mounts, &m, e) < 0) {
			mount_free(&m);
			return -1;
		}
		mount_free(&m);
	}
	return 0;
}

static bool has_mount(const struct ctr_mounts *ms, const char *path)
{
	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->v[i].src, path) == 0 && strcmp(ms->v[i].dst, path) == 0)
			return true;
	return false;
}

/* `check` and `bench` in an image: their workers are ctrun-worker (cmd_check.c). */
static bool runs_worker(const struct options *o, bool agent)
{
	return agent && o->command.n > 0 && strcmp(o->command.v[0], CTR_WORKER_BIN) == 0;
}

static int add_mounts(struct ctr_setup *c, const struct options *o, const struct topo *t,
		      const char *cwd, bool agent, struct err *e)
{
	struct ctr_mounts *ms = &c->spec.mounts;
	char logdir[PATH_MAX];

	/* What enroot and apptainer give every container (OCI has nothing by itself). */
	if (c->spec.rt->host_files) {
		if (access("/tmp", F_OK) == 0 && mounts_add(ms, "/tmp", "/tmp", false, false, e) < 0)
			return -1;
		for (const char *const *f = (const char *const[]){ "/etc/hosts", "/etc/resolv.conf",
								 NULL }; *f != NULL; f++)
			if (access(*f, R_OK) == 0 && mounts_add(ms, *f, *f, true, true, e) < 0)
				return -1;
	}
	/* The home (before the working directory, which may lie in it), the
	 * user's /etc/passwd and /etc/group (ident.c). */
	if (ctr_ident_mounts(c, agent, e) < 0)
		return -1;
	/* The working directory, where it is outside too (unless --workdir). */
	if (o->workdir == NULL && strcmp(cwd, "/") != 0 && !has_mount(ms, cwd) &&
	    mounts_add(ms, cwd, cwd, false, false, e) < 0)
		return -1;
	if (add_user_mounts(c, o, cwd, e) < 0)
		return -1;
	if (o->log_dir != NULL && agent) {
		struct ctr_mount m;

		if (mount_parse(o->log_dir, cwd, &m, e) < 0)
			return err_wrap(e, "--log-dir");
		if (launch_log_dir(m.src, t, !o->dry_run, logdir, sizeof(logdir), e) < 0) {
			mount_free(&m);
			return -1;
		}
		if (mounts_add(ms, m.src, m.src, false, false, e) < 0) {
			mount_free(&m);
			return -1;
		}
		mount_free(&m);
	}
	if (agent && (mounts_add(ms, c->rundir, AGENT_DIR, true, false, e) < 0 ||
		      mounts_add(ms, c->agent, AGENT_BIN, true, true, e) < 0))
		return -1;
	if (runs_worker(o, agent)) {
		char worker[PATH_MAX] = "";

		if (ctr_sibling("ctrun-worker", worker, sizeof(worker)) < 0)
			return err_set(e, EXIT_CTRUN, "ctrun-worker not found next to ctrun (%s): it "
				       "runs the workers of check and bench inside the container",
				       worker);
		if (ctr_worker_check(ctr_root_dir(&c->root), c->image, worker, e) < 0 ||
		    mounts_add(ms, worker, CTR_WORKER_BIN, true, true, e) < 0)
			return -1;
	}
	return 0;
}

static int make_rundir(struct ctr_setup *c, const char *host, bool agent, bool worker,
		       struct err *e)
{
	char path[PATH_MAX];
	int fd;

	if (!c->rundir_made) {
		if (mkdir(c->rundir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "run directory %s", c->rundir);
		c->rundir_made = true;
	}
	if (xsnprintf(path, sizeof(path), "%s/owner", c->rundir) < 0 ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return err_sys(e, EXIT_CTRUN, "run directory %s", c->rundir);
	if (dprintf(fd, "%s %ld\n", host, (long)getpid()) < 0 || close(fd) < 0)
		return err_sys(e, EXIT_CTRUN, "run directory %s", c->rundir);
	if (agent) {
		/* Mount points of the binaries: the run directory is mounted read-only. */
		for (const char *const *f = (const char *const[]){ "agent", worker ? "worker" : NULL,
								 NULL }; *f; f++) {
			if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, *f) < 0)
				return err_set(e, EXIT_CTRUN, "run directory path too long");
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (fd < 0)
				return err_sys(e, EXIT_CTRUN, "%s", path);
			close(fd);
		}
		for (const char *const *f = (const char *const[]){ "events", "control", NULL }; *f;
		     f++)
			if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, *f) < 0 ||
			    mkfifo(path, 0600) < 0)
				return err_sys(e, EXIT_CTRUN, "FIFO %s", path);
	}
	for (const char *const *d = c->spec.rt->rundir_dirs; d != NULL && *d != NULL; d++)
		if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, *d) < 0 ||
		    mkdir(path, 0755) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", path);
	return 0;
}

static int setup(struct ctr_setup *c, const struct options *o, const struct topo *t,
		 char *const *envp, bool agent, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	char base[PATH_MAX], pick_note[2048];
	/* --save: node rank 0's first task saves (run.c). */
	bool saves = o->save != NULL && t->node_rank == 0 && t->local_rank_base == 0;
	unsigned rnd;

	if (realpath(o->image, c->image) == NULL)
		return err_sys(e, EXIT_CTRUN, "image %s", o->image);
	{
		/* Inside a step there is nobody to stage before it starts. */
		if (o->stage != NULL && strcmp(o->stage, "sbcast") == 0 &&
		    envp_get(envp, "CTRUN_BATCH_STEP") == NULL && t->local_rank_base == 0 && !o->quiet)
			fprintf(stderr, "ctrun: --stage sbcast: not inside srun; run ctrun in the sbatch "
				"script (it stages before its step), or sbcast the image yourself and "
				"pass its node-local path to --image\n");
		/* The batch step's node-local copy (stage.h), when it is whole. */
		const char *note, *local = stage_local(c->image, envp, &note);

		if (note != NULL)
			fprintf(stderr, "ctrun: %s: %s\n", c->image, note);
		else if (local != c->image && o->verbose > 0)
			fprintf(stderr, "ctrun: %s staged on %s: %s\n", c->image, t->host, local);
		if (local != c->image && xsnprintf(c->image, sizeof(c->image), "%s", local) < 0)
			return err_set(e, EXIT_CTRUN, "staged image path too long");
	}
	s->image = c->image;
	if (image_detect(c->image, &s->kind, e) < 0)
		return -1;
	/* auto: ctrun's own start where enroot, as configured here, would
	 * add nothing (enrootcfg.c); -v says which and why. */
	if (ctr_pick_runtime(&(struct ctr_pick){ .want = ctr_named_want(o), .kind = s->kind,
						 .image = c->image, .adds = ctr_enroot_adds,
						 .arg = (void *)envp, .note = pick_note,
						 .note_size = sizeof(pick_note) },
			     &s->rt, c->bin, sizeof(c->bin), e) < 0)
		return -1;
	if (pick_note[0] != '\0' && o->verbose > 0)
		fprintf(stderr, "ctrun: %s\n", pick_note);
	s->bin = c->bin;
	if (s->rt->app_version)
		ctr_app_version(c->bin, &s->app);
	s->agent = agent;
	s->quiet = o->quiet;
	s->uid = geteuid();
	s->gid = getegid();
	s->rootless = s->uid != 0;
	s->slurm = t->step_id != NULL;
	s->entrypoint = o->entrypoint;
	if (ctr_ident_init(c, o, e) < 0)
		return -1;
	s->writable = o->writable;
	if (getcwd(c->cwd, sizeof(c->cwd)) == NULL)
		return err_sys(e, EXIT_CTRUN, "current directory");
	if (o->workdir != NULL && o->workdir[0] != '/')
		return err_set(e, EXIT_USAGE, "--workdir %s: must be an absolute path in the "
			       "container", o->workdir);
	/* Owned by c, as every string the spec points to: it outlives this call. */
	s->cwd = o->workdir != NULL ? o->workdir : c->cwd;
	if (base_dir(envp, base, sizeof(base), e) < 0)
		return -1;
	/* Unique on a node shared by several clusters' or steps' ctruns (/tmp is). */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (xsnprintf(c->id, sizeof(c->id), "ctrun-%s.%s.%ld-%s-%ld-%08x", t->job_id,
		      t->step_id != NULL ? t->step_id : "0", t->rank_base, t->host, (long)getpid(),
		      rnd) < 0 ||
	    xsnprintf(c->rundir, sizeof(c->rundir), "%s/%s", base, c->id) < 0 ||
	    xsnprintf(c->oci_root, sizeof(c->oci_root), "%s/state", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (!o->dry_run)
		gc_rundirs(base, t->host);
	for (char *p = c->id; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			*p = '_';
	s->id = c->id;
	s->rundir = c->rundir;
	/* Task mode: the tasks of this step on this node share one image
	 * holder (one mount per node), met at a name of the step, the host
	 * and the image. */
	if (t->mode == MODE_TASK && t->step_id != NULL) {
		char id[CACHE_ID_MAX];
		struct err ie = { 0 };

		if (cache_identity(c->image, id, sizeof(id), &ie) == 0)
			xsnprintf(c->share, sizeof(c->share), "%s/share-%s.%s-%s-%.16s", base,
				  t->job_id, t->step_id, t->host, id);
	}
	s->oci_root = c->oci_root;
	if (agent && ctr_sibling("ctrun-agent", c->agent, sizeof(c->agent)) < 0)
		return err_set(e, EXIT_CTRUN, "ctrun-agent not found next to ctrun (%s): it "
			       "runs the workers inside the container", c->agent);
	if (ctr_named_check(o, t, s, e) < 0)
		return -1;
	/* enroot keeps a named container, and a saving task's, in its own
	 * data directory: no other root file system to prepare. */
	if ((ctr_root_need(s->rt) != ROOT_ENROOT || o->dry_run || (o->name == NULL && !saves)) &&
	    rootfs(c, o, envp, e) < 0)
		return -1;
	if (ctr_named_take(c, o, saves, envp, e) < 0)
		return -1;
	phase_mark(c->root.holder.fd >= 0 ? "image (mounted)" : "image");
	if (add_mounts(c, o, t, c->cwd, agent, e) < 0)
		return -1;
	if (ctr_root_dir(&c->root) != NULL) {
		/* Resolved inside the image: a symlink there never leads a mount out. */
		for (size_t i = 0; i < s->mounts.n; i++)
			if (mount_resolve_dest(s->rootfs, &s->mounts.v[i], e) < 0)
				return -1;
		if (s->rt->image_env && image_environ_read(s->rootfs, &s->env, e) < 0)
			return -1;
	}
	if (ctr_gpus(c, o, t, envp, e) < 0)
		return -1;
	if (!o->dry_run && (make_rundir(c, t->host, agent, runs_worker(o, agent), e) < 0 ||
			    ctr_ident_files(c, e) < 0))
		return -1;
	if (ctr_named_dirs(c, o, e) < 0)
		return -1;
	return 0;
}

int ctr_setup_init(struct ctr_setup *c, const struct options *o, const struct topo *t,
		   char *const *envp, bool agent, struct err *e)
{
	memset(c, 0, sizeof(*c));
	c->hold_fd = -1;
	c->named.lock_fd = -1;
	ctr_root_init(&c->root);
	if (setup(c, o, t, envp, agent, e) < 0) {
		ctr_setup_free(c);
		return -1;
	}
	return 0;
}

void ctr_setup_free(struct ctr_setup *c)
{
	/* Nothing is mounted there in ctrun's namespace (the overlay lived in
	 * the runtime's private one, the image in the holder's); remove_tree
	 * never follows a link. */
	ctr_root_free(&c->root);
	named_close(&c->named);
	if (c->rundir_made && remove_tree(c->rundir) < 0 && errno != ENOENT)
		fprintf(stderr, "ctrun: cannot remove %s: %s\n", c->rundir, strerror(errno));
	if (c->hold_fd >= 0)
		close(c->hold_fd);
	mounts_free(&c->spec.mounts);
	mounts_free(&c->spec.driver);
	strv_free(&c->spec.enroot_config_entries);
	strv_free(&c->spec.env);
	strv_free(&c->spec.argv);
	for (size_t i = 0; i < c->spec.ndevices; i++)
		free(c->spec.devices[i].path);
	free(c->spec.devices);
	memset(c, 0, sizeof(*c));
	c->hold_fd = -1;
	c->named.lock_fd = -1;
	ctr_root_init(&c->root);
}

int ctr_make_plan(const struct ctr_setup *c, struct ctr_plan *p, struct err *e)
{
	if (c->spec.rt == NULL)
		return err_set(e, EXIT_CTRUN, "no container runtime");
	return c->spec.rt->plan(&c->spec, p, e);
}
