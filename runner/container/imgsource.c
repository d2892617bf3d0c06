/* imgsource.c - where a container's root comes from: for OCI the squashfs
 * or SIF mounted where it lies (the image holder, holder.c), for enroot the
 * squashfs started by enroot itself, or, when it cannot or need not be (an
 * unpacked entry is there already), the node cache's unpacked entry
 * (setup.c). */
#include "container.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgmount.h"
#include "runtime.h"
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
	if ((c->share[0] != '\0'
		     ? holder_share(&c->holder, c->image, s->kind, c->rootfs_ns, s->rootless, c->share,
				    c->rootfs_ns, sizeof(c->rootfs_ns), &he)
		     : holder_start(&c->holder, c->image, s->kind, c->rootfs_ns, s->rootless, &he)) < 0) {
		rmdir(c->rootfs_ns);
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s", he.msg);
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", c->image, he.msg);
		return 0;
	}
	/* The holder's own directory, by descriptor: no pid that could be reused. */
	if (xsnprintf(c->rootfs, sizeof(c->rootfs), "/proc/self/fd/%d", c->holder.root) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	s->rootfs = c->rootfs;
	s->rootfs_ns = c->rootfs_ns;
	s->holder = true;
	s->holder_mnt = c->holder.mnt;
	s->holder_user = c->holder.user;
	c->rootfs_real = true;
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: %s mounted (%s), not unpacked%s\n", c->image,
			s->rootless ? "squashfuse_ll" : "kernel squashfs",
			c->holder.client ? "; the mount of another task of this node" : "");
	return 1;
}

/* Why enroot cannot start `image` from the file, or NULL.  enroot 3.0-4.1
 * (runtime.sh, runtime::start and runtime::_mount_rootfs) take a start
 * argument that unsquashfs -s reads as a squashfs, mount it with squashfuse
 * and fuse-overlayfs (or native overlayfs with ENROOT_NATIVE_OVERLAYFS),
 * and hand the real path to a bash child inside single quotes. */
static const char *enroot_file_why_not(const char *real, char *const *envp)
{
	const char *native = envp_get(envp, "ENROOT_NATIVE_OVERLAYFS");
	char path[PATH_MAX];
	int fd;

	if (strchr(real, '\'') != NULL)
		return "enroot passes the image's path to a shell in single quotes, and this path "
		       "has a ' (rename the file)";
	if (!ctr_which("unsquashfs", path, sizeof(path)))
		return "unsquashfs is not installed (apt install squashfs-tools)";
	if (!ctr_which("squashfuse", path, sizeof(path)))
		return "squashfuse is not installed (apt install squashfuse)";
	if ((native == NULL || *native == '\0') && !ctr_which("fuse-overlayfs", path, sizeof(path)))
		return "fuse-overlayfs is not installed (enroot 3 needs it: apt install "
		       "fuse-overlayfs; enroot 4 does not: set ENROOT_NATIVE_OVERLAYFS=yes)";
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return "/dev/fuse cannot be opened (it should be mode 0666)";
	close(fd);
	return NULL;
}

int ctr_enroot_from_file(struct ctr_setup *c, const struct options *o, char *const *envp,
			 struct err *e)
{
	const char *mode = o->image_mode != NULL ? o->image_mode : "auto", *why;
	bool must = strcmp(mode, "mount") == 0;
	char real[PATH_MAX];

	if (strcmp(mode, "unpack") == 0)
		return 0;
	if (c->spec.kind != IMAGE_SQUASHFS) {
		if (must)
			return err_set(e, EXIT_USAGE, "--image-mode mount: %s: enroot starts only a "
				       "squashfs without unpacking it (use --image-mode auto)", c->image);
		return 0;
	}
	/* An unpacked entry is there already: the fastest start of all. */
	if (!must && access(c->rootfs, F_OK) == 0)
		return 0;
	if (realpath(c->image, real) == NULL)
		return err_sys(e, EXIT_USAGE, "--image %s", c->image);
	why = enroot_file_why_not(real, envp);
	if (why != NULL) {
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: enroot cannot start %s "
				       "without unpacking it: %s", c->image, why);
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: unpacking %s for enroot, not starting it from the "
				"file: %s\n", c->image, why);
		return 0;
	}
	if (xsnprintf(c->enroot_image, sizeof(c->enroot_image), "%s", real) < 0)
		return err_set(e, EXIT_USAGE, "--image %s: path too long", c->image);
	c->spec.enroot_name = c->enroot_image;
	c->spec.rootfs = NULL;
	c->rootfs_real = false;
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: enroot starts %s from the file (squashfuse), not unpacked\n",
			c->image);
	return 1;
}
