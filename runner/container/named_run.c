/* named_run.c - --name for one run: where a container can be kept, the
 * named container taken in the user's node cache (images/named.h), and the
 * spec pointed at it.
 *
 * OCI, crun, charliecloud: the overlay's upper and work directories are the
 * named container's (ocins.c), on disk instead of the run's tmpfs.  enroot:
 * enroot's own container (`enroot create` once, then `enroot start --rw`,
 * as pyxis's --container-name), kept inside the named container's
 * directory (ENROOT_DATA_PATH=containers/NAME, container "rootfs"), so
 * listing, removing and the lock are the same for every runtime. */
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
		/* enroot's own writable start keeps its layer in a tmpfs of
		 * its namespace, gone when the container ends. */
		if (ctr_root_need(s->rt) == ROOT_ENROOT && o->name == NULL)
			return err_set(e, EXIT_USAGE, "--save under enroot needs --name NAME (its "
				       "container is then kept and saved), or use --runtime oci");
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

int ctr_named_take(struct ctr_setup *c, const struct options *o, char *const *envp,
		   struct err *e)
{
	struct cache_cfg cfg;
	char dir[PATH_MAX], real[PATH_MAX], id[CACHE_ID_MAX];
	struct named_req q = { .name = o->name, .reset = o->name_reset };

	if (o->name == NULL && o->save != NULL) {
		/* The run's changes outlive its namespace until they are saved:
		 * the upper layer on disk in the run directory. */
		c->spec.writable = true;
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

	if (o->name != NULL || o->save == NULL || o->dry_run)
		return 0;
	if (xsnprintf(dir, sizeof(dir), "%s/save", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (mkdir(dir, 0700) < 0 || mkdir(c->named.upper, 0755) < 0 || mkdir(c->named.work, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "--save: %s", dir);
	return 0;
}
