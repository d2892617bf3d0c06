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
#include "cache/cache.h"
#include "drivers.h"
#include "gpu_pin.h"
#include "imgconfig.h"
#include "unpack/imgmount.h"
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
 * removing theirs: each holds "HOST PID" in its owner file (only PID's
 * when only > 0).  And the rendezvous of a task-mode holder whose starter
 * died (holder_share_gc knows when nobody is there any more). */
static void gc_rundirs(const char *base, const char *host, long only)
{
	DIR *d = opendir(base);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX], *text, h[256];
		long pid;

		if (only <= 0 && share_of_host(base, de->d_name, host, path, sizeof(path))) {
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
		    (only <= 0 || pid == only) && kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
		    xsnprintf(path, sizeof(path), "%s/%s", base, de->d_name) >= 0)
			remove_tree(path);
		free(text);
	}
	closedir(d);
}

int ctr_reap_rundir(char *const *envp, const char *host, long pid, struct err *e)
{
	char base[PATH_MAX];

	if (pid <= 0)
		return err_set(e, EXIT_USAGE, "no process to remove the run directory of");
	if (base_dir(envp, base, sizeof(base), e) < 0)
		return -1;
	gc_rundirs(base, host, pid);
	return 0;
}

static int add_user_mounts(struct ctr_setup *c, const char *cwd, struct err *e)
{
	const struct strv *mounts = c->ask.mounts;

	for (size_t i = 0; i < mounts->n; i++) {
		struct ctr_mount m;

		if (mount_parse(mounts->v[i], cwd, &m, e) < 0)
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

static int add_mounts(struct ctr_setup *c, const struct topo *t, const char *cwd, bool agent,
		      struct err *e)
{
	const struct ctr_ask *o = &c->ask;
	struct ctr_mounts *ms = &c->spec.mounts;

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
	if (add_user_mounts(c, cwd, e) < 0)
		return -1;
	/* --log-dir: the node's directory in it (made, but not under
	 * --dry-run), bound at its own path; c->log_dir for the agent's spec. */
	if (o->log_dir != NULL && agent) {
		struct ctr_mount m;

		if (mount_parse(o->log_dir, cwd, &m, e) < 0)
			return err_wrap(e, "--log-dir");
		if (launch_log_dir(m.src, t, !o->dry_run, c->log_dir, sizeof(c->log_dir), e) < 0) {
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
	if (o->worker) {
		char worker[PATH_MAX] = "";

		if (sibling_path("ctrun-worker", worker, sizeof(worker)) < 0)
			return err_set(e, EXIT_CTRUN, "ctrun-worker not found next to ctrun (%s): it "
				       "runs the workers of check and bench inside the container",
				       worker);
		if (ctr_worker_check(ctr_rootfs_dir(&c->spec), c->image, worker, e) < 0 ||
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

/* Resolve the image: its real path, the batch step's node-local copy
 * (stage.h) when it is whole, its kind. */
static int resolve_image(struct ctr_setup *c, const struct topo *t, struct err *e)
{
	const struct ctr_ask *o = &c->ask;
	const char *note, *local;

	if (realpath(o->image, c->image) == NULL)
		return err_sys(e, EXIT_CTRUN, "image %s", o->image);
	/* Inside a step there is nobody to stage before it starts. */
	if (o->stage != NULL && strcmp(o->stage, "sbcast") == 0 &&
	    envp_get(o->envp, "CTRUN_BATCH_STEP") == NULL && t->local_rank_base == 0 && !o->quiet)
		fprintf(stderr, "ctrun: --stage sbcast: not inside srun; run ctrun in the sbatch "
			"script (it stages before its step), or sbcast the image yourself and "
			"pass its node-local path to --image\n");
	local = stage_local(c->image, o->envp, &note);
	if (note != NULL)
		fprintf(stderr, "ctrun: %s: %s\n", c->image, note);
	else if (local != c->image && o->verbose > 0)
		fprintf(stderr, "ctrun: %s staged on %s: %s\n", c->image, t->host, local);
	if (local != c->image && xsnprintf(c->image, sizeof(c->image), "%s", local) < 0)
		return err_set(e, EXIT_CTRUN, "staged image path too long");
	c->spec.image = c->image;
	return image_detect(c->image, &c->spec.kind, e);
}

/* Pick the runtime: its driver and binary (auto: ctrun's own start where
 * a runtime, as configured here, would add nothing: drivers.h auto_own;
 * -v says which and why), and the driver's own state. */
static int pick_runtime(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	char note[2048];

	if (ctr_pick_runtime(&(struct ctr_pick){ .want = ctr_named_want(&c->ask), .kind = s->kind,
						 .image = c->image, .envp = c->ask.envp, .note = note,
						 .start_fast = c->ask.start_fast,
						 .note_size = sizeof(note) },
			     &s->rt, c->bin, sizeof(c->bin), e) < 0)
		return -1;
	if (note[0] != '\0' && c->ask.verbose > 0)
		fprintf(stderr, "ctrun: %s\n", note);
	s->bin = c->bin;
	/* The driver's own state, for its phases and its plan. */
	if (s->rt->own_size > 0 && (s->own = calloc(1, s->rt->own_size)) == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", s->rt->name);
	return 0;
}

/* Who runs the container, and where: the caller's identity, the working
 * directory (--workdir, else ctrun's own); then the driver's probe of its
 * binary and the host. */
static int identity(struct ctr_setup *c, const struct topo *t, bool agent, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	const char *workdir = c->ask.workdir;

	s->agent = agent;
	s->uid = geteuid();
	s->gid = getegid();
	s->rootless = s->uid != 0;
	s->slurm = t->step_id != NULL;
	if (ctr_ident_init(c, e) < 0)
		return -1;
	if (getcwd(c->cwd, sizeof(c->cwd)) == NULL)
		return err_sys(e, EXIT_CTRUN, "current directory");
	if (workdir != NULL && workdir[0] != '/')
		return err_set(e, EXIT_USAGE, "--workdir %s: must be an absolute path in the "
			       "container", workdir);
	/* Owned by c, as every string the spec points to: it outlives this call. */
	s->cwd = workdir != NULL ? workdir : c->cwd;
	if (ctr_unshare_parse(c->ask.unshare, &s->unshare, e) < 0)
		return -1;
	if (s->unshare != 0 && !s->rt->unshares)
		return err_set(e, EXIT_USAGE, "--unshare %s: %s cannot give the container "
			       "namespaces of its own: use --runtime oci, crun or enroot",
			       c->ask.unshare, s->rt->name);
	return s->rt->probe != NULL ? s->rt->probe(s, &c->ask, e) : 0;
}

/* The run's names: its id, its run directory (a dead ctrun's of this host
 * removed), task mode's holder shared by the node's tasks, the agent. */
static int names(struct ctr_setup *c, const struct topo *t, bool agent, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	char base[PATH_MAX];
	unsigned rnd;

	if (base_dir(c->ask.envp, base, sizeof(base), e) < 0)
		return -1;
	/* Unique on a node shared by several clusters' or steps' ctruns (/tmp is). */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (xsnprintf(c->id, sizeof(c->id), "ctrun-%s.%s.%ld-%s-%ld-%08x", t->job_id,
		      t->step_id != NULL ? t->step_id : "0", t->rank_base, t->host, (long)getpid(),
		      rnd) < 0 ||
	    xsnprintf(c->rundir, sizeof(c->rundir), "%s/%s", base, c->id) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (!c->ask.dry_run)
		gc_rundirs(base, t->host, 0);
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
	if (agent && sibling_path("ctrun-agent", c->agent, sizeof(c->agent)) < 0)
		return err_set(e, EXIT_CTRUN, "ctrun-agent not found next to ctrun (%s): it "
			       "runs the workers inside the container", c->agent);
	return 0;
}

/* Prepare the root: the image's root file system on this node (ctrroot.h
 * decides, imgsource.c makes it), into the spec; or the driver's own. */
static int prepare_root(struct ctr_setup *c, struct err *e)
{
	struct ctr_root_req q = { .image = c->image, .kind = c->spec.kind,
				  .need = ctr_root_need(c->spec.rt), .rundir = c->rundir,
				  .rundir_made = &c->rundir_made, .share = c->share,
				  .root = !c->spec.rootless, .ask = &c->ask };

	if (q.need == ROOT_DRIVER)
		return c->spec.rt->root(&c->spec, &c->ask, e);
	if (ctr_root_prepare(&q, &c->root, e) < 0)
		return -1;
	ctr_root_spec(&c->root, &c->spec);
	return 0;
}

/* Mounts and identity: the binds (ident.c's among them), their
 * destinations resolved inside the image, the image's environment. */
static int mounts(struct ctr_setup *c, const struct topo *t, bool agent, struct err *e)
{
	struct ctr_spec *s = &c->spec;

	if (add_mounts(c, t, c->cwd, agent, e) < 0)
		return -1;
	/* Resolved inside the image: a symlink there never leads a mount out
	 * (and umount:DST meets the mounts it names at their resolved place). */
	for (size_t i = 0; ctr_rootfs_dir(s) != NULL && i < s->mounts.n; i++)
		if (mount_resolve_dest(s->rootfs, &s->mounts.v[i], e) < 0)
			return -1;
	if (mounts_apply_umounts(&s->mounts, s->rt->runtime_detach, ctr_runtime_name(s->rt),
				 e) < 0)
		return -1;
	if (ctr_rootfs_dir(s) == NULL)
		return 0;
	if (s->rt->image_env && image_environ_read(s->rootfs, &s->env, e) < 0)
		return -1;
	return 0;
}

/* The run directory: its files and FIFOs, the identity files, a --save
 * run's layer (nothing under --dry-run). */
static int rundir(struct ctr_setup *c, const struct topo *t, bool agent, struct err *e)
{
	if (!c->ask.dry_run && (make_rundir(c, t->host, agent, c->ask.worker, e) < 0 ||
				ctr_ident_files(c, e) < 0))
		return -1;
	return ctr_named_dirs(c, e);
}

/* The phases of a run's set-up, in order (docs/architecture.md "One run
 * in a container"): the plan, start, watch and clean-up follow in run.c. */
static int setup(struct ctr_setup *c, const struct topo *t, bool agent, struct err *e)
{
	if (resolve_image(c, t, e) < 0 || pick_runtime(c, e) < 0 ||
	    identity(c, t, agent, e) < 0 || names(c, t, agent, e) < 0 ||
	    ctr_named_check(&c->ask, t, &c->spec, e) < 0 || prepare_root(c, e) < 0 ||
	    ctr_named_take(c, e) < 0)
		return -1;
	phase_mark(c->root.holder.fd >= 0 ? "image (mounted)" : "image");
	if (mounts(c, t, agent, e) < 0 || ctr_gpus(c, t, e) < 0 || ctr_devices(c, e) < 0 ||
	    rundir(c, t, agent, e) < 0)
		return -1;
	return 0;
}

int ctr_setup_init(struct ctr_setup *c, const struct options *o, const struct topo *t,
		   char *const *envp, bool agent, struct err *e)
{
	memset(c, 0, sizeof(*c));
	c->hold_fd = -1;
	c->named.lock_fd = c->named.gate_fd = -1;
	named_root_init(&c->nroot);
	ctr_root_init(&c->root);
	ctr_ask_init(c, o, t, envp, agent);
	if (setup(c, t, agent, e) < 0) {
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
	named_root_leave(&c->named, &c->nroot);
	named_close(&c->named);
	if (c->rundir_made && remove_tree(c->rundir) < 0 && errno != ENOENT)
		fprintf(stderr, "ctrun: cannot remove %s: %s\n", c->rundir, strerror(errno));
	if (c->hold_fd >= 0)
		close(c->hold_fd);
	mounts_free(&c->spec.mounts);
	ctr_edits_free(&c->spec.edits);
	cdi_reg_free(&c->cdi);
	strv_free(&c->cdi_gpus);
	strv_free(&c->spec.env);
	strv_free(&c->spec.argv);
	if (c->spec.own != NULL && c->spec.rt->fini != NULL)
		c->spec.rt->fini(c->spec.own);
	free(c->spec.own);
	memset(c, 0, sizeof(*c));
	c->hold_fd = -1;
	c->named.lock_fd = c->named.gate_fd = -1;
	named_root_init(&c->nroot);
	ctr_root_init(&c->root);
}

/* The mount points of the edits' binds under /.ctrun (the run directory,
 * bound read-only, where no runtime can make one): an empty file, or a
 * directory's placeholder, made with the run directory, as the drivers'
 * own files there (CTR_DRIVER_DIR).  Elsewhere the runtime makes them in
 * the container's writable layer, as for CDI's binds. */
static int edit_points(const struct ctr_setup *c, struct ctr_plan *p, struct err *e)
{
	const size_t prefix = strlen("/.ctrun");

	for (size_t i = 0; i < c->spec.edits.nmounts; i++) {
		const struct ctr_edit_mount *m = &c->spec.edits.mounts[i];
		char path[PATH_MAX];
		struct stat st;
		bool dir;

		if (!m->bind || stat(m->src, &st) < 0)
			continue;
		dir = S_ISDIR(st.st_mode);
		if (strncmp(m->dst, "/.ctrun/", prefix + 1) != 0 || c->spec.rundir == NULL)
			continue;
		if (xsnprintf(path, sizeof(path), "%s%s%s", c->spec.rundir, m->dst + prefix,
			      dir ? "/.ctrun-mount-point" : "") < 0)
			return err_set(e, EXIT_CTRUN, "run directory path too long");
		if (ctr_plan_file(p, path, "", 0, e) < 0)
			return -1;
	}
	return 0;
}

int ctr_make_plan(const struct ctr_setup *c, struct ctr_plan *p, struct err *e)
{
	struct strv env = { 0 };

	if (c->spec.rt == NULL)
		return err_set(e, EXIT_CTRUN, "no container runtime");
	if (c->spec.rt->plan(&c->spec, p, e) < 0)
		return -1;
	/* The edits' environment (rt/edits.h) under the driver's own, for the
	 * workers under every runtime (the agent's runtime layer). */
	if (c->spec.edits.env.n > 0) {
		if (strv_extend(&env, c->spec.edits.env.v) < 0 ||
		    strv_extend(&env, p->agent_env.v) < 0) {
			strv_free(&env);
			return err_sys(e, EXIT_CTRUN, "plan");
		}
		strv_free(&p->agent_env);
		p->agent_env = env;
	}
	p->gpus_renumbered |= c->spec.edits.gpus_renumbered;
	if (edit_points(c, p, e) < 0)
		return -1;
	/* The host's network stack's libraries (netstack.c), on every worker's
	 * LD_LIBRARY_PATH. */
	if (c->spec.edits.libdir != NULL && strv_find(&p->agent_libdirs, c->spec.edits.libdir) < 0 &&
	    strv_push(&p->agent_libdirs, c->spec.edits.libdir) < 0)
		return err_sys(e, EXIT_CTRUN, "plan");
	return 0;
}
