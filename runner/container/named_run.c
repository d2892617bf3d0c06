/* named_run.c - --name for one run: where a container can be kept, the
 * named container taken in the user's node cache (images/named.h), and the
 * spec pointed at it.
 *
 * OCI, crun, charliecloud: the overlay's upper and work directories are the
 * named container's (ocins.c), on disk instead of the run's tmpfs.  enroot:
 * enroot's own container (`enroot create` once, then `enroot start --rw`,
 * as pyxis's --container-name), kept inside the named container's
 * directory (ENROOT_DATA_PATH=containers/NAME, container "rootfs"), so
 * listing, removing and the lock are the same for every runtime.  A
 * --save run without --name under enroot gets such a container of its own
 * in the run directory (enroot_save). */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* The container inside a named container's directory (enroot). */
#define NAMED_ENROOT "rootfs"

int ctr_named_check(const struct options *o, const struct topo *t, const struct ctr_spec *s,
		    struct err *e)
{
	if (o->save != NULL) {
		if (ctr_save_check(o->save, e) < 0)
			return -1;
		if (ctr_root_need(s->rt) == ROOT_IMAGE_FILE)
			return err_set(e, EXIT_USAGE, "--save: %s runs cannot be saved by ctrun: use "
				       "--runtime oci or enroot", ctr_runtime_name(s->rt));
		if (ctr_root_need(s->rt) == ROOT_ENROOT && s->kind != IMAGE_SQUASHFS)
			return err_set(e, EXIT_USAGE, "--save: enroot saves containers of a squashfs "
				       "only, and %s is not one (use --runtime oci)", s->image);
	}
	if (o->name == NULL) {
		if (o->name_reset)
			return err_set(e, EXIT_USAGE, "--name-reset needs --name NAME (the named "
				       "container to start anew)");
		return 0;
	}
	if (named_check_name(o->name, e) < 0)
		return -1;
	if (ctr_root_need(s->rt) == ROOT_IMAGE_FILE)
		return err_set(e, EXIT_USAGE, "--name %s: %s runs are not kept (Singularity 3.x's "
			       "--overlay needs its setuid starter): use --runtime oci or enroot",
			       o->name, ctr_runtime_name(s->rt));
	/* Task mode starts one container per task: their overlays would
	 * share one upper directory at once, which is undefined. */
	if (t->mode == MODE_TASK && t->ntasks_on_node > 1)
		return err_set(e, EXIT_USAGE, "--name %s: %ld tasks of this step on %s would each "
			       "start a container over the same kept layer: run one task per node "
			       "(node mode: srun --ntasks-per-node=1 ctrun --nproc-per-node N)",
			       o->name, t->ntasks_on_node, t->host);
	return 0;
}

/* enroot-mount's x-create makes a missing mount point with mode 0
 * (mkdir(path, 0): bin/enroot-mount.c create_file).  In a kept container
 * the next run's user then cannot look into /.ctrun for /.ctrun/agent:
 * give that directory of ours its search bits back. */
static int unzero_ctrun(const char *rootfs, struct err *e)
{
	struct stat st;
	int fd = open(rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", rootfs);
	if (fstatat(fd, ".ctrun", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 0777) == 0 &&
	    fchmodat(fd, ".ctrun", 0755, 0) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "%s/.ctrun", rootfs);
	}
	close(fd);
	return 0;
}

/* enroot: its container "rootfs" in the named directory, made once. */
static int enroot_named(struct ctr_setup *c, bool dry_run, char *const *envp, struct err *e)
{
	struct ctr_root *r = &c->root;
	char path[PATH_MAX];

	if (c->spec.kind != IMAGE_SQUASHFS)
		return err_set(e, EXIT_USAGE, "--name: enroot keeps containers of a squashfs "
			       "only, and %s is not one (use --runtime oci)", c->image);
	if (xsnprintf(path, sizeof(path), "%s/%s", c->named.dir, NAMED_ENROOT) < 0 ||
	    xsnprintf(r->enroot_data, sizeof(r->enroot_data), "%s", c->named.dir) < 0 ||
	    xsnprintf(r->enroot_name, sizeof(r->enroot_name), "%s", NAMED_ENROOT) < 0 ||
	    xsnprintf(r->path, sizeof(r->path), "%s", path) < 0)
		return err_set(e, EXIT_CTRUN, "named container %s: path too long", c->named.dir);
	r->kind = ROOTFS_ENROOT_DATA;
	r->real = access(path, F_OK) == 0;
	if (dry_run) { /* named, not made */
		ctr_root_spec(r, &c->spec);
		return 0;
	}
	if (!r->real &&
	    ctr_enroot_create_named(c->bin, c->image, c->named.dir, NAMED_ENROOT, envp, e) < 0)
		return -1;
	if (unzero_ctrun(path, e) < 0)
		return -1;
	r->real = true;
	ctr_root_spec(r, &c->spec);
	return 0;
}

/* --save without --name under enroot, in the task that saves: enroot's
 * own writable start keeps its layer in a tmpfs of its namespace, gone when
 * the container ends, so the run gets an enroot container of its own, made
 * as a named one is (`enroot create`, then `enroot start --rw`, as pyxis's
 * --container-save), in the run directory (ENROOT_DATA_PATH RUNDIR/save):
 * saved after the run, removed with the run directory (after a kill -9 by
 * the next ctrun of the node, gc_rundirs). */
static int enroot_save(struct ctr_setup *c, bool dry_run, char *const *envp, struct err *e)
{
	if (xsnprintf(c->named.dir, sizeof(c->named.dir), "%s/save", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (!dry_run) {
		if (!c->rundir_made && mkdir(c->rundir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "run directory %s", c->rundir);
		c->rundir_made = true;
		if (mkdir(c->named.dir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "--save: %s", c->named.dir);
	}
	return enroot_named(c, dry_run, envp, e);
}

const char *ctr_named_want(const struct options *o)
{
	struct cache_cfg cfg;
	char dir[PATH_MAX], path[PATH_MAX];
	struct err ignored = { 0 };

	if (o->name == NULL || (o->runtime != NULL && strcmp(o->runtime, "auto") != 0) ||
	    ctr_cache_cfg(o, &cfg, dir, sizeof(dir), &ignored) < 0 ||
	    xsnprintf(path, sizeof(path), "%s/containers/%s/%s", dir, o->name, NAMED_ENROOT) < 0 ||
	    access(path, F_OK) < 0)
		return o->runtime;
	return "enroot";
}

int ctr_named_take(struct ctr_setup *c, const struct options *o, bool saves, char *const *envp,
		   struct err *e)
{
	struct cache_cfg cfg;
	char dir[PATH_MAX], real[PATH_MAX], id[CACHE_ID_MAX];
	struct named_req q = { .name = o->name, .reset = o->name_reset };

	if (o->name == NULL && o->save != NULL) {
		c->spec.writable = true;
		if (ctr_root_need(c->spec.rt) == ROOT_ENROOT)
			return saves ? enroot_save(c, o->dry_run, envp, e) : 0;
		/* The run's changes outlive its namespace until they are saved:
		 * the upper layer on disk in the run directory. */
		if (xsnprintf(c->named.upper, sizeof(c->named.upper), "%s/save/upper", c->rundir) < 0 ||
		    xsnprintf(c->named.work, sizeof(c->named.work), "%s/save/work", c->rundir) < 0)
			return err_set(e, EXIT_CTRUN, "run directory path too long");
		c->spec.named_upper = c->named.upper;
		c->spec.named_work = c->named.work;
		return 0;
	}
	if (o->name == NULL)
		return 0;
	c->spec.writable = true;
	if (ctr_cache_cfg(o, &cfg, dir, sizeof(dir), e) < 0)
		return -1;
	cfg.lookup = NULL; /* the user's own cache, never the shared one */
	/* The identity of the image the user named, not of a staged copy
	 * (each job's copy is a new file). */
	if (realpath(o->image, real) == NULL)
		return err_sys(e, EXIT_USAGE, "--image %s", o->image);
	if (cache_identity(real, id, sizeof(id), e) < 0)
		return -1;
	q.cfg = &cfg;
	q.image = real;
	q.identity = id;
	if (o->dry_run) {
		if (xsnprintf(c->named.dir, sizeof(c->named.dir), "%s/containers/%s", dir,
			      o->name) < 0 ||
		    xsnprintf(c->named.upper, sizeof(c->named.upper), "%s/upper", c->named.dir) < 0 ||
		    xsnprintf(c->named.work, sizeof(c->named.work), "%s/work", c->named.dir) < 0)
			return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", dir);
	} else if (named_open(&q, &c->named, e) < 0) {
		return -1;
	}
	if (c->named.created && o->verbose > 0)
		fprintf(stderr, "ctrun: --name %s: a new container from %s\n", o->name, real);
	if (ctr_root_need(c->spec.rt) == ROOT_ENROOT)
		return enroot_named(c, o->dry_run, envp, e);
	c->spec.named_upper = c->named.upper;
	c->spec.named_work = c->named.work;
	return 0;
}

int ctr_named_dirs(const struct ctr_setup *c, const struct options *o, struct err *e)
{
	char dir[PATH_MAX];

	/* enroot's container of a --save run is made already (enroot_save). */
	if (o->name != NULL || o->save == NULL || o->dry_run ||
	    ctr_root_need(c->spec.rt) == ROOT_ENROOT)
		return 0;
	if (xsnprintf(dir, sizeof(dir), "%s/save", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (mkdir(dir, 0700) < 0 || mkdir(c->named.upper, 0755) < 0 || mkdir(c->named.work, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "--save: %s", dir);
	return 0;
}
