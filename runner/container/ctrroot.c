/* ctrroot.c - the root file system decision (pure: no I/O, the facts come
 * from imgsource.c) and its result's helpers (see ctrroot.h). */
#include "ctrroot.h"

#include <string.h>

#include "unpack/imgmount.h"

/* A tree (OCI): the image mounted by the holder where --image-mode lets
 * it and the host can, else the node cache's unpacked entry.  An entry
 * that is there already wins in auto mode: the fastest start of all (a
 * mount decompresses again what each run reads). */
static int tree(const struct ctr_root_facts *f, struct ctr_root_choice *c, struct err *e)
{
	bool must = f->mode == IMAGE_MODE_MOUNT;
	/* Root mounts with the kernel, a user with squashfuse_ll. */
	const char *why = f->root ? f->no_kernel_mount : f->no_fuse_mount;

	if (!image_mountable(f->kind))
		why = "only a squashfs or a SIF can be mounted";

	c->kind = ROOTFS_CACHE;
	c->placeholder = f->dry_run; /* unpacking is no dry run */
	if (f->mode == IMAGE_MODE_UNPACK || (!must && f->cached))
		return 0;
	if (why != NULL) {
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s: %s", f->image, why);
		/* Nobody asked to mount an archive: nothing to explain. */
		c->why_unpacked = image_mountable(f->kind) ? why : NULL;
		return 0;
	}
	/* A user's named container: the squashfuse_ll of a mount would end
	 * with this run (its step, under Slurm), while its root may serve the
	 * runs after it (namedroot.h).  pyxis's named container is unpacked
	 * too (enroot create). */
	if (f->named && !f->root) {
		if (must)
			return err_set(e, EXIT_USAGE, "--image-mode mount --name: a user's named "
				       "container runs over the image unpacked in the node cache (a "
				       "FUSE mount would end with the run that made it, while the "
				       "container's other runs use it): drop --image-mode mount");
		c->why_unpacked = "a user's named container outlives the run that mounts its image";
		return 0;
	}
	c->kind = ROOTFS_HOLDER;
	c->share = f->task_share;
	return 0;
}

int ctr_root_decide(const struct ctr_root_facts *f, struct ctr_root_choice *c, struct err *e)
{
	memset(c, 0, sizeof(*c));
	/* A directory is used as it is, whatever the runtime: the overlay
	 * never writes to it. */
	if (f->kind == IMAGE_DIR) {
		c->kind = ROOTFS_DIR;
		return 0;
	}
	switch (f->need) {
	case ROOT_IMAGE_FILE:
		c->kind = ROOTFS_NONE;
		return 0;
	case ROOT_TREE:
		return tree(f, c, e);
	case ROOT_DRIVER: /* not this decision's: the driver's root phase */
		break;
	}
	return err_set(e, EXIT_CTRUN, "no root file system for this runtime");
}

void ctr_root_init(struct ctr_root *r)
{
	memset(r, 0, sizeof(*r));
	holder_init(&r->holder);
}

void ctr_root_free(struct ctr_root *r)
{
	holder_stop(&r->holder);
	ctr_root_init(r);
}

void ctr_root_spec(const struct ctr_root *r, struct ctr_spec *s)
{
	switch (r->kind) {
	case ROOTFS_NONE:
		break;
	case ROOTFS_HOLDER:
		s->rootfs_ns = r->path_ns;
		s->holder = true;
		s->holder_mnt = r->holder.mnt;
		s->holder_user = r->holder.user;
		/* fall through */
	case ROOTFS_DIR:
	case ROOTFS_CACHE:
	case ROOTFS_PLACEHOLDER:
		s->rootfs = r->path;
		s->rootfs_real = r->real;
		break;
	}
}
