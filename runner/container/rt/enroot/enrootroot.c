/* enrootroot.c - enroot's root phase (enroot.h): the one decision (pure,
 * enroot_root_decide: facts in, choice out, unit tested for every kind x
 * --image-mode x what is there) and acting on it: enroot's own start of
 * the squashfs file (squashfuse + overlay, nothing unpacked), or a
 * container in its data directory, created once per node under a lock and
 * then reused. */
#include "enroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util.h"

/* --writable: `enroot start --rw` of the node's shared container would
 * write into it for every later run; enroot's own start of the file puts a
 * per-run tmpfs over the image instead. */
static int writable(const struct enroot_root_facts *f, struct enroot_root_choice *c,
		    struct err *e)
{
	if (f->mode == IMAGE_MODE_UNPACK)
		return err_set(e, EXIT_USAGE, "--writable with --image-mode unpack: enroot would "
			       "write into the node's shared container of %s (use --image-mode auto, "
			       "or --runtime oci)", f->image);
	if (f->kind != IMAGE_SQUASHFS)
		return err_set(e, EXIT_USAGE, "--writable: enroot writes over a squashfs only, and "
			       "%s is not one (use --runtime oci)", f->image);
	if (f->no_file != NULL)
		return err_set(e, EXIT_CTRUN, "--writable: enroot cannot start %s over a per-run "
			       "layer: %s", f->image, f->no_file);
	c->file = true;
	return 0;
}

int enroot_root_decide(const struct enroot_root_facts *f, struct enroot_root_choice *c,
		       struct err *e)
{
	bool must = f->mode == IMAGE_MODE_MOUNT;

	memset(c, 0, sizeof(*c));
	if (f->writable)
		return writable(f, c, e);
	if (f->mode == IMAGE_MODE_UNPACK)
		return 0;
	if (f->kind != IMAGE_SQUASHFS) {
		if (must)
			return err_set(e, EXIT_USAGE, "--image-mode mount: %s: enroot starts only a "
				       "squashfs without unpacking it (use --image-mode auto)", f->image);
		return 0;
	}
	if (!must && f->cached)
		return 0;
	if (f->no_file != NULL) {
		if (must)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: enroot cannot start %s "
				       "without unpacking it: %s", f->image, f->no_file);
		c->why_unpacked = f->no_file;
		return 0;
	}
	c->file = true;
	return 0;
}

/* Why enroot cannot start `image` from the file, or NULL.  enroot 3.0-4.1
 * (runtime.sh, runtime::start and runtime::_mount_rootfs) take a start
 * argument that unsquashfs -s reads as a squashfs, mount it with squashfuse
 * and fuse-overlayfs (or native overlayfs with ENROOT_NATIVE_OVERLAYFS),
 * and hand the real path to a bash child inside single quotes. */
static const char *file_why_not(const char *real, char *const *envp)
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

/* enroot's names: its data directory (ENROOT_DATA_PATH, else the cache's
 * enroot-data), the container ctrun-ID named by the image's identity, and
 * the lock of its creation. */
static int names(struct ctr_spec *s, const struct ctr_ask *a, const struct cache_cfg *cfg,
		 char *lock, size_t size, struct err *e)
{
	struct enroot_own *own = s->own;
	char id[CACHE_ID_MAX];
	const char *data = envp_get(a->envp, "ENROOT_DATA_PATH");

	if (cache_identity(s->image, id, sizeof(id), e) < 0)
		return -1;
	if (data != NULL && *data != '\0') {
		if (xsnprintf(own->data, sizeof(own->data), "%s", data) < 0)
			return err_set(e, EXIT_CTRUN, "ENROOT_DATA_PATH too long");
	} else if (xsnprintf(own->data, sizeof(own->data), "%s/enroot-data", cfg->dir) < 0) {
		return err_set(e, EXIT_CTRUN, "cache dir too long");
	}
	if (xsnprintf(own->name, sizeof(own->name), "ctrun-%s", id) < 0 ||
	    xsnprintf(own->path, sizeof(own->path), "%s/%s", own->data, own->name) < 0 ||
	    xsnprintf(lock, size, "%s/locks/enroot-%s.lock", cfg->dir, id) < 0)
		return err_set(e, EXIT_CTRUN, "enroot data path too long");
	return 0;
}

/* The container in its data directory, created once under a lock
 * (--dry-run: named, a directory only when it is there already). */
static int data(struct ctr_spec *s, const struct ctr_ask *a, const struct cache_cfg *cfg,
		const char *lock, bool cached, struct err *e)
{
	struct enroot_own *own = s->own;
	struct enroot_create ec = { s->bin, s->image, own->data, a->envp };
	char locks[PATH_MAX];

	if (a->dry_run) {
		s->rootfs_real = cached;
		return 0;
	}
	if (mkdir_p(own->data, 0700) < 0 ||
	    xsnprintf(locks, sizeof(locks), "%s/locks", cfg->dir) < 0 || mkdir_p(locks, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "enroot data %s", own->data);
	if (cache_create_once_e(lock, own->path, enroot_create, &ec, a->quiet, e) < 0)
		return -1;
	s->rootfs_real = true;
	return 0;
}

int enroot_root(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	struct enroot_own *own = s->own;
	const struct cache_cfg *cfg;
	struct enroot_root_facts f = { .kind = s->kind, .mode = a->image_mode,
				       /* --save makes a run writable (the keep phase) */
				       .writable = a->writable || a->save != NULL, .image = s->image };
	struct enroot_root_choice c;
	char lock[PATH_MAX], real[PATH_MAX];

	/* A named container, and a saving task's, is the keep phase's. */
	if (!a->dry_run && (a->name != NULL || a->saves))
		return 0;
	cfg = ctr_ask_cache(a, e);
	if (cfg == NULL || names(s, a, cfg, lock, sizeof(lock), e) < 0)
		return -1;
	f.cached = access(own->path, F_OK) == 0;
	if (s->kind == IMAGE_SQUASHFS && f.mode != IMAGE_MODE_UNPACK &&
	    !(f.mode == IMAGE_MODE_AUTO && f.cached && !f.writable)) {
		if (realpath(s->image, real) == NULL)
			return err_sys(e, EXIT_USAGE, "--image %s", s->image);
		f.no_file = file_why_not(real, a->envp);
	}
	if (enroot_root_decide(&f, &c, e) < 0)
		return -1;
	if (c.why_unpacked != NULL && a->verbose > 0)
		fprintf(stderr, "ctrun: unpacking %s for enroot, not starting it from the file: %s\n",
			s->image, c.why_unpacked);
	if (!c.file) {
		if (data(s, a, cfg, lock, f.cached, e) < 0)
			return -1;
	} else {
		/* enroot starts the squashfs file itself, by its real path. */
		if (xsnprintf(own->name, sizeof(own->name), "%s", real) < 0)
			return err_set(e, EXIT_CTRUN, "enroot data path too long");
		if (a->verbose > 0)
			fprintf(stderr, "ctrun: enroot starts %s from the file (squashfuse), not "
				"unpacked\n", s->image);
	}
	s->rootfs = s->rootfs_real ? own->path : NULL;
	return 0;
}
