/* imgsource.c - where a container's root comes from, the acting part of
 * the root phase (a driver with its own root has its own, drivers.h): the
 * facts of this host for ctr_root_decide (ctrroot.c: is an unpacked copy
 * there, can the image be mounted), then what it chose: the squashfs or
 * SIF mounted where it lies (the image holder, holder.c) or the node
 * cache's unpacked entry. */
#include "imgsource.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unpack/imgmount.h"
#include "rootpath.h"
#include "runtime.h"
#include "util.h"

/* One preparation: the request, the result and the cache's settings. */
struct act {
	const struct ctr_root_req *q;
	struct ctr_root *r;
	const struct cache_cfg *cfg; /* the node cache's settings (ask) */
};

/* The facts the decision reads, looked at only where it reads them. */
static int facts(struct act *a, struct ctr_root_facts *f, struct err *e)
{
	const struct ctr_root_req *q = a->q;

	*f = (struct ctr_root_facts){ .need = q->need, .kind = q->kind,
				      .mode = q->ask->image_mode,
				      .dry_run = q->ask->dry_run, .task_share = q->share[0] != '\0',
				      .root = q->root, .image = q->image,
				      .named = q->ask->name != NULL };
	if (q->kind == IMAGE_DIR || q->need == ROOT_IMAGE_FILE)
		return 0;
	a->cfg = ctr_ask_cache(q->ask, e);
	if (a->cfg == NULL)
		return -1;
	f->cached = f->mode == IMAGE_MODE_AUTO && cache_has_entry(a->cfg, q->image);
	/* The host's part of image_mount_possible (the decision knows which
	 * kinds mount), for this user; it names why not, if not. */
	(void)image_mount_possible(IMAGE_SQUASHFS, q->root,
				   q->root ? &f->no_kernel_mount : &f->no_fuse_mount);
	return 0;
}

/* The node cache's unpacked entry (--dry-run: its name). */
static int cache_entry(struct act *a, bool placeholder, struct err *e)
{
	struct ctr_root *r = a->r;

	if (placeholder) {
		r->kind = ROOTFS_PLACEHOLDER;
		if (xsnprintf(r->path, sizeof(r->path), "<%s: node cache entry of %s>", a->cfg->dir,
			      a->q->image) < 0)
			return err_set(e, EXIT_CTRUN, "image path too long");
		return 0;
	}
	r->kind = ROOTFS_CACHE;
	if (cache_get_rootfs(a->cfg, a->q->image, r->path, sizeof(r->path), e) < 0)
		return -1;
	r->real = true;
	return 0;
}

/* Starts the holder (or joins the node's) on RUNDIR/image: 0; 1 when the
 * holder could not mount (its reason in he, nothing left behind but the
 * run directory); -1 with e when the directories could not be made. */
static int start_holder(struct act *a, bool share, struct err *he, struct err *e)
{
	const struct ctr_root_req *q = a->q;
	struct ctr_root *r = a->r;
	struct holder_req hq = { .image = q->image, .kind = q->kind, .dir = r->path_ns,
				 .rootless = !q->root, .share = share ? q->share : NULL };

	if (!*q->rundir_made) {
		if (mkdir(q->rundir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "run directory %s", q->rundir);
		*q->rundir_made = true;
	}
	if (mkdir(r->path_ns, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", r->path_ns);
	if ((share ? holder_share(&r->holder, &hq, r->path_ns, sizeof(r->path_ns), he)
		   : holder_start(&r->holder, &hq, he)) < 0) {
		rmdir(r->path_ns);
		return 1;
	}
	return 0;
}

/* The squashfs or SIF mounted where it lies, by the image holder; where
 * that fails, the unpacked entry (auto) or an error (--image-mode mount). */
static int holder(struct act *a, const struct ctr_root_choice *c, struct err *e)
{
	const struct ctr_root_req *q = a->q;
	struct ctr_root *r = a->r;
	struct err he = { 0 };
	int rv;

	if (xsnprintf(r->path_ns, sizeof(r->path_ns), "%s/image", q->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (c->placeholder) {
		r->kind = ROOTFS_PLACEHOLDER;
		if (xsnprintf(r->path, sizeof(r->path), "<%s mounted at %s>", q->image, r->path_ns) < 0)
			return err_set(e, EXIT_CTRUN, "image path too long");
		return 0;
	}
	rv = start_holder(a, c->share, &he, e);
	if (rv < 0)
		return -1;
	if (rv > 0) {
		if (q->ask->image_mode == IMAGE_MODE_MOUNT)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s", he.msg);
		if (q->ask->verbose > 0)
			fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", q->image, he.msg);
		return cache_entry(a, false, e);
	}
	r->kind = ROOTFS_HOLDER;
	/* The holder's own directory, by descriptor: no pid that could be reused. */
	if (xsnprintf(r->path, sizeof(r->path), "/proc/self/fd/%d", r->holder.root) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	r->real = true;
	if (q->ask->verbose > 0)
		fprintf(stderr, "ctrun: %s mounted (%s), not unpacked%s\n", q->image,
			q->root ? "kernel squashfs" : "squashfuse_ll",
			r->holder.client ? "; the mount of another task of this node" : "");
	return 0;
}

/* Acts on the decision. */
static int act(struct act *a, const struct ctr_root_choice *c, struct err *e)
{
	struct ctr_root *r = a->r;

	switch (c->kind) {
	case ROOTFS_NONE:
		return 0;
	case ROOTFS_DIR:
		r->kind = ROOTFS_DIR;
		r->real = true;
		if (xsnprintf(r->path, sizeof(r->path), "%s", a->q->image) < 0)
			return err_set(e, EXIT_CTRUN, "image path too long");
		return 0;
	case ROOTFS_CACHE:
		return cache_entry(a, c->placeholder, e);
	case ROOTFS_HOLDER:
		return holder(a, c, e);
	case ROOTFS_PLACEHOLDER:
		break;
	}
	return err_set(e, EXIT_CTRUN, "root file system: no way to make it");
}

int ctr_root_prepare(const struct ctr_root_req *q, struct ctr_root *r, struct err *e)
{
	struct act a = { .q = q, .r = r };
	struct ctr_root_facts f;
	struct ctr_root_choice c;

	if (facts(&a, &f, e) < 0 || ctr_root_decide(&f, &c, e) < 0)
		return -1;
	if (c.why_unpacked != NULL && q->ask->verbose > 0)
		fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", q->image,
			c.why_unpacked);
	return act(&a, &c, e);
}
