/* imgsource.c - where a container's root comes from, the acting part:
 * the facts of this host for ctr_root_decide (ctrroot.c: is an unpacked
 * copy there, can the image be mounted, can enroot start the file), then
 * what it chose: the squashfs or SIF mounted where it lies (the image
 * holder, holder.c), the node cache's unpacked entry, or enroot's
 * container in its data directory. */
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

#include "imgmount.h"
#include "rootpath.h"
#include "runtime.h"
#include "util.h"

/* One preparation: the request, the result and the cache's settings. */
struct act {
	const struct ctr_root_req *q;
	struct ctr_root *r;
	struct cache_cfg cfg;
	char dir[PATH_MAX]; /* the cache directory */
	char lock[PATH_MAX]; /* enroot: the creation's lock */
	bool cached;         /* enroot: its container is there (ctr_root_facts's) */
};

int ctr_cache_cfg(const struct options *o, struct cache_cfg *c, char *dirbuf, size_t size,
		  struct err *e)
{
	memset(c, 0, sizeof(*c));
	if (o->cache_dir != NULL) {
		if (xsnprintf(dirbuf, size, "%s", o->cache_dir) < 0)
			return err_set(e, EXIT_USAGE, "[cache] dir too long");
	} else if (cache_default_dir(dirbuf, size, e) < 0) {
		return -1;
	}
	c->dir = dirbuf;
	c->lookup = o->cache_shared;
	c->budget_bytes = o->cache_budget;
	c->max_unpacked = o->cache_max_unpacked;
	c->quiet = o->quiet;
	if (o->cache_progress == NULL || strcmp(o->cache_progress, "auto") == 0)
		c->progress = isatty(STDERR_FILENO) && !o->quiet;
	else
		c->progress = strcmp(o->cache_progress, "true") == 0;
	return 0;
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

/* enroot's names: its data directory (ENROOT_DATA_PATH, else the cache's
 * enroot-data), the container ctrun-ID named by the image's identity. */
static int enroot_names(struct act *a, struct err *e)
{
	struct ctr_root *r = a->r;
	char id[CACHE_ID_MAX];
	const char *data = envp_get(a->q->envp, "ENROOT_DATA_PATH");

	if (cache_identity(a->q->image, id, sizeof(id), e) < 0)
		return -1;
	if (data != NULL && *data != '\0') {
		if (xsnprintf(r->enroot_data, sizeof(r->enroot_data), "%s", data) < 0)
			return err_set(e, EXIT_CTRUN, "ENROOT_DATA_PATH too long");
	} else if (xsnprintf(r->enroot_data, sizeof(r->enroot_data), "%s/enroot-data", a->dir) < 0) {
		return err_set(e, EXIT_CTRUN, "cache dir too long");
	}
	if (xsnprintf(r->enroot_name, sizeof(r->enroot_name), "ctrun-%s", id) < 0 ||
	    xsnprintf(r->path, sizeof(r->path), "%s/%s", r->enroot_data, r->enroot_name) < 0 ||
	    xsnprintf(a->lock, sizeof(a->lock), "%s/locks/enroot-%s.lock", a->dir, id) < 0)
		return err_set(e, EXIT_CTRUN, "enroot data path too long");
	return 0;
}

/* The facts the decision reads, looked at only where it reads them. */
static int facts(struct act *a, struct ctr_root_facts *f, struct err *e)
{
	const struct ctr_root_req *q = a->q;

	*f = (struct ctr_root_facts){ .need = q->need, .kind = q->kind,
				      .mode = ctr_image_mode(q->o->image_mode),
				      .dry_run = q->o->dry_run, .task_share = q->share[0] != '\0',
				      .root = q->root,
				      /* --save makes a run writable (named_run.c) */
				      .writable = q->o->writable || q->o->save != NULL,
				      .image = q->image };
	if (q->kind == IMAGE_DIR || q->need == ROOT_IMAGE_FILE)
		return 0;
	if (ctr_cache_cfg(q->o, &a->cfg, a->dir, sizeof(a->dir), e) < 0)
		return -1;
	if (q->need == ROOT_TREE) {
		f->cached = f->mode == IMAGE_MODE_AUTO && cache_has_entry(&a->cfg, q->image);
		/* The host's part of image_mount_possible (the decision knows
		 * which kinds mount), for this user; it names why not, if not. */
		(void)image_mount_possible(IMAGE_SQUASHFS, q->root,
					   q->root ? &f->no_kernel_mount : &f->no_fuse_mount);
		return 0;
	}
	if (enroot_names(a, e) < 0)
		return -1;
	f->cached = a->cached = access(a->r->path, F_OK) == 0;
	if (q->kind != IMAGE_SQUASHFS || f->mode == IMAGE_MODE_UNPACK ||
	    (f->mode == IMAGE_MODE_AUTO && f->cached && !f->writable))
		return 0;
	if (realpath(q->image, a->r->enroot_file) == NULL)
		return err_sys(e, EXIT_USAGE, "--image %s", q->image);
	f->no_enroot_file = enroot_file_why_not(a->r->enroot_file, q->envp);
	return 0;
}

/* The node cache's unpacked entry (--dry-run: its name). */
static int cache_entry(struct act *a, bool placeholder, struct err *e)
{
	struct ctr_root *r = a->r;

	if (placeholder) {
		r->kind = ROOTFS_PLACEHOLDER;
		if (xsnprintf(r->path, sizeof(r->path), "<%s: node cache entry of %s>", a->dir,
			      a->q->image) < 0)
			return err_set(e, EXIT_CTRUN, "image path too long");
		return 0;
	}
	r->kind = ROOTFS_CACHE;
	if (cache_get_rootfs(&a->cfg, a->q->image, r->path, sizeof(r->path), e) < 0)
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
		if (ctr_image_mode(q->o->image_mode) == IMAGE_MODE_MOUNT)
			return err_set(e, EXIT_CTRUN, "--image-mode mount: %s", he.msg);
		if (q->o->verbose > 0)
			fprintf(stderr, "ctrun: unpacking %s, not mounting it: %s\n", q->image, he.msg);
		return cache_entry(a, false, e);
	}
	r->kind = ROOTFS_HOLDER;
	/* The holder's own directory, by descriptor: no pid that could be reused. */
	if (xsnprintf(r->path, sizeof(r->path), "/proc/self/fd/%d", r->holder.root) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	r->real = true;
	if (q->o->verbose > 0)
		fprintf(stderr, "ctrun: %s mounted (%s), not unpacked%s\n", q->image,
			q->root ? "kernel squashfs" : "squashfuse_ll",
			r->holder.client ? "; the mount of another task of this node" : "");
	return 0;
}

struct enroot_create {
	const char *bin, *image, *data;
	char *const *envp;
};

/* cache_create_once_e's callback: `enroot create` under the temporary name,
 * which cache_create_once_e then renames into place (enroot's create is not
 * atomic, and `create -f` deletes recursively). */
static int enroot_create(const char *tmp, void *arg, struct err *e)
{
	struct enroot_create *c = arg;
	struct strv argv = { 0 }, env = { 0 };
	const char *name = strrchr(tmp, '/');
	int ws, rv = -1;
	pid_t pid;

	if (rt_enroot_create_argv(c->bin, c->image, name != NULL ? name + 1 : tmp, &argv, e) < 0)
		goto out;
	if (strv_extend(&env, c->envp) < 0 || strv_setenv(&env, "ENROOT_DATA_PATH", c->data, 1) < 0) {
		err_sys(e, EXIT_CTRUN, "enroot create");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		err_sys(e, EXIT_CTRUN, "fork");
		goto out;
	}
	if (pid == 0) {
		/* Its notes ("Extracting squashfs filesystem...") are not the
		 * job's output. */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvpe(argv.v[0], argv.v, env.v);
		_exit(EXIT_NOTFOUND);
	}
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			err_sys(e, EXIT_CTRUN, "enroot create");
			goto out;
		}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		err_set(e, EXIT_CTRUN, "enroot create of %s failed (status %d)", c->image,
			WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
		goto out;
	}
	rv = 0;
out:
	strv_free(&argv);
	strv_free(&env);
	return rv;
}

int ctr_enroot_create_named(const char *bin, const char *image, const char *data,
			    const char *name, char *const *envp, struct err *e)
{
	struct enroot_create ec = { bin, image, data, envp };
	char tmp[PATH_MAX], final[PATH_MAX];

	if (xsnprintf(tmp, sizeof(tmp), "%s/%s.ctrun-tmp.%ld", data, name, (long)getpid()) < 0 ||
	    xsnprintf(final, sizeof(final), "%s/%s", data, name) < 0)
		return err_set(e, EXIT_CTRUN, "enroot data %s: path too long", data);
	(void)remove_tree(tmp);
	if (enroot_create(tmp, &ec, e) < 0 || rename(tmp, final) < 0) {
		if (e->code == 0)
			err_sys(e, EXIT_CTRUN, "enroot create: %s", final);
		(void)remove_tree(tmp);
		return -1;
	}
	return 0;
}

/* enroot's container in its data directory, created once under a lock
 * (--dry-run: named, a directory only when it is there already). */
static int enroot_data(struct act *a, struct err *e)
{
	const struct ctr_root_req *q = a->q;
	struct ctr_root *r = a->r;
	struct enroot_create ec = { q->bin, q->image, r->enroot_data, q->envp };
	char locks[PATH_MAX];

	r->kind = ROOTFS_ENROOT_DATA;
	if (q->o->dry_run) {
		r->real = a->cached;
		return 0;
	}
	if (mkdir_p(r->enroot_data, 0700) < 0 ||
	    xsnprintf(locks, sizeof(locks), "%s/locks", a->dir) < 0 || mkdir_p(locks, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "enroot data %s", r->enroot_data);
	if (cache_create_once_e(a->lock, r->path, enroot_create, &ec, q->o->quiet, e) < 0)
		return -1;
	r->real = true;
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
	case ROOTFS_ENROOT_DATA:
		return enroot_data(a, e);
	case ROOTFS_ENROOT_FILE:
		r->kind = ROOTFS_ENROOT_FILE;
		if (a->q->o->verbose > 0)
			fprintf(stderr, "ctrun: enroot starts %s from the file (squashfuse), not "
				"unpacked\n", a->q->image);
		return 0;
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
	if (c.why_unpacked != NULL && q->o->verbose > 0)
		fprintf(stderr, q->need == ROOT_ENROOT
				? "ctrun: unpacking %s for enroot, not starting it from the file: %s\n"
				: "ctrun: unpacking %s, not mounting it: %s\n",
			q->image, c.why_unpacked);
	return act(&a, &c, e);
}
