/* imgsource.c - where an OCI container's root comes from: the squashfs or
 * SIF mounted where it lies (the image holder, holder.c), or, when it
 * cannot or need not be (an unpacked entry is there already), the node
 * cache's unpacked entry (setup.c). */
#include "container.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgmount.h"
#include "util.h"

int ctr_mount_image(struct ctr_setup *c, const struct options *o, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	const char *mode = o->image_mode != NULL ? o->image_mode : "auto", *why = NULL;
	bool must = strcmp(mode, "mount") == 0;
	struct err he = { 0 };

	if (strcmp(mode, "unpack") == 0)
		return 0;
	/* An unpacked entry is there already: the fastest start of all (a
	 * mount decompresses again what each run reads). */
	if (!must) {
		struct cache_cfg cfg;
		char dir[PATH_MAX];

		if (ctr_cache_cfg(o, &cfg, dir, sizeof(dir), e) < 0)
			return -1;
		if (cache_has_entry(&cfg, c->image))
			return 0;
	}
	if (!image_mount_possible(s->kind, !s->rootless, &why)) {
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s: %s", c->image, why);
		if (o->verbose > 0 && (s->kind == IMAGE_SQUASHFS || s->kind == IMAGE_SIF))
			fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", c->image, why);
		return 0;
	}
	if (xsnprintf(c->rootfs_ns, sizeof(c->rootfs_ns), "%s/image", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (o->dry_run) {
		if (xsnprintf(c->rootfs, sizeof(c->rootfs), "<%s mounted at %s>", c->image,
			      c->rootfs_ns) < 0)
			return err_set(e, EXIT_CTRUN, "image path too long");
		s->rootfs = c->rootfs;
		return 1;
	}
	if (!c->rundir_made) {
		if (mkdir(c->rundir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "run directory %s", c->rundir);
		c->rundir_made = true;
	}
	if (mkdir(c->rootfs_ns, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", c->rootfs_ns);
	if (holder_start(&c->holder, c->image, s->kind, c->rootfs_ns, s->rootless, &he) < 0) {
		rmdir(c->rootfs_ns);
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s", he.msg);
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", c->image, he.msg);
		return 0;
	}
	if (xsnprintf(c->rootfs, sizeof(c->rootfs), "/proc/%ld/root%s", (long)c->holder.pid,
		      c->rootfs_ns) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	s->rootfs = c->rootfs;
	s->rootfs_ns = c->rootfs_ns;
	s->holder = c->holder.pid;
	c->rootfs_real = true;
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: %s mounted (%s), not unpacked\n", c->image,
			s->rootless ? "squashfuse_ll" : "kernel squashfs");
	return 1;
}
