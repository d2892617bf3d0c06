/* overlay.c - the root a plan asks for with plan.ovl (the OCI drivers',
 * charliecloud's): the namespaces ctrun enters just before exec'ing the
 * runtime: a private mount namespace (plus a user namespace mapping the
 * caller to root when rootless), a tmpfs, and an overlay of the cached
 * image with the container's mount points created in it (with --name, the
 * upper layer is the named container's directory on disk instead:
 * images/cache/named.h).
 *
 * Why an overlay: a runtime can only bind onto a destination that exists,
 * the cached image is shared read-only by every run on the node, and
 * creating mount points in it would change it for everyone (and fail on an
 * image that is itself read-only).  The overlay's upper layer lives on a
 * tmpfs of the private namespace, so it disappears with the container. */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "holder.h"
#include "inroot.h"
#include "userns.h"
#include "util.h"

/* overlayfs splits its options at ',' and lowerdir at ':'; a backslash escapes both. */
static int escape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; *in != '\0'; in++) {
		if (*in == ',' || *in == ':' || *in == '\\') {
			if (o + 1 >= size)
				return -1;
			out[o++] = '\\';
		}
		if (o + 1 >= size)
			return -1;
		out[o++] = *in;
	}
	out[o] = '\0';
	return 0;
}

/* crun (1.8) refuses a hybrid host whose cgroup2 hierarchy holds a
 * controller; runc uses the v1 hierarchies there.  A tmpfs over that mount,
 * in the runtime's private namespace only, shows crun a v1 host as well
 * (its cgroup directory in the tmpfs vanishes with the namespace). */
static int hide_cgroup2(struct err *e)
{
	static const char dir[] = "/sys/fs/cgroup/unified";
	struct statfs fs;
	char *ctl;
	bool busy;

	if (statfs(dir, &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC)
		return 0;
	ctl = read_file("/sys/fs/cgroup/unified/cgroup.controllers", NULL);
	busy = ctl != NULL && ctl[strspn(ctl, " \n")] != '\0';
	free(ctl);
	if (busy && mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") < 0)
		return err_sys(e, EXIT_CTRUN, "oci: tmpfs on %s", dir);
	return 0;
}

/* plan.ovl_stage: every mount's source bound at OVL_TMP/b/N with its
 * options, for a runtime that binds read-write and keeps the source
 * mount's flags (ch-run): it binds the staged path instead.  A flag the
 * source's mount has stays (a user namespace may not clear it). */
static int stage(const struct ctr_spec *s, const struct ctr_plan *p, struct err *e)
{
	char dir[4096], path[4160];

	if (xsnprintf(dir, sizeof(dir), "%s/b", p->ovl_tmp) < 0)
		return err_set(e, EXIT_CTRUN, "path too long: %s", p->ovl_tmp);
	if (mkdir(dir, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", dir);
	for (size_t i = 0; i < s->mounts.n; i++) {
		const struct ctr_mount *m = &s->mounts.v[i];
		unsigned long flags = MS_BIND | MS_REMOUNT;
		struct statvfs sv;
		int fd;

		if (xsnprintf(path, sizeof(path), "%s/%zu", dir, i) < 0)
			return err_set(e, EXIT_CTRUN, "path too long: %s", dir);
		if (m->file) {
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0 || close(fd) < 0)
				return err_sys(e, EXIT_CTRUN, "mount %s: %s", m->src, path);
		} else if (mkdir(path, 0755) < 0) {
			return err_sys(e, EXIT_CTRUN, "mount %s: %s", m->src, path);
		}
		if (mount(m->src, path, NULL, MS_BIND | MS_REC, NULL) < 0 || statvfs(path, &sv) < 0)
			return err_sys(e, EXIT_CTRUN, "mount %s: binding it at %s", m->src, path);
		if (m->ro || (sv.f_flag & ST_RDONLY))
			flags |= MS_RDONLY;
		if (!m->suid || (sv.f_flag & ST_NOSUID))
			flags |= MS_NOSUID;
		if (!m->dev || (sv.f_flag & ST_NODEV))
			flags |= MS_NODEV;
		if (sv.f_flag & ST_NOEXEC)
			flags |= MS_NOEXEC;
		if (mount(NULL, path, NULL, flags, NULL) < 0)
			return err_sys(e, EXIT_CTRUN, "mount %s: options of its bind at %s", m->src,
				       path);
	}
	return 0;
}

/* plan.ovl_points: a mount point the runtime itself needs, made in the
 * overlay's upper layer where the image has nothing at that path.
 * Whatever is there, a symlink too, is left to the runtime as before. */
static int runtime_point(int rootfd, const struct ctr_mount *m, struct err *e)
{
	struct err ignored = { 0 };
	int fd = inroot_open(rootfd, m->dst, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, INROOT_CHROOT,
			     NULL);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != ENOENT || mount_point_create(rootfd, m, &ignored) == 0)
		return 0;
	return err_sys(e, EXIT_CTRUN, "the image has no %s, on which %s mounts, and ctrun could "
		       "not make it in the container's own layer", m->dst, m->src);
}

int ovl_mount(const char *lower, const char *upper, const char *work, const char *target,
	      const char *source, bool rootless, struct err *e)
{
	char el[8192], eu[8192], ew[8192], opts[3 * 8192 + 64];

	if (escape(lower, el, sizeof(el)) < 0 || escape(upper, eu, sizeof(eu)) < 0 ||
	    escape(work, ew, sizeof(ew)) < 0 ||
	    xsnprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", el, eu, ew,
		      rootless ? ",userxattr" : "") < 0)
		return err_set(e, EXIT_CTRUN, "oci: image path too long: %s", lower);
	/* userxattr (Linux >= 5.11) when rootless: a user namespace may not set
	 * overlayfs's trusted.* attributes, and without user.overlay.* ones
	 * removing or renaming a directory of the image fails with EIO (an
	 * opaque directory or a redirect needs one; measured here).
	 * nodev, nosuid: a device node or setuid file of a mounted (not
	 * sanitized, images/unpack/sanitize.c) image stays inert. */
	if (mount(source, target, "overlay", MS_NODEV | MS_NOSUID, opts) < 0 &&
	    /* A kernel or upper file system without it: as before. */
	    (!rootless || errno != EINVAL ||
	     (opts[strlen(opts) - strlen(",userxattr")] = '\0',
	      mount(source, target, "overlay", MS_NODEV | MS_NOSUID, opts) < 0)))
		return err_sys(e, EXIT_CTRUN, "oci: overlay of %s on %s", lower, target);
	return 0;
}

int overlay_enter(const struct ctr_spec *s, const struct ctr_plan *p, struct err *e)
{
	char upper[4096], work[4096];
	int rootfd;

	if (s->named_shared) {
		/* The named container's root is mounted in a user namespace of
		 * its own when rootless: its runs join that one, then take a
		 * mount namespace of their own from the host's. */
		if (s->named_user >= 0 && setns((int)s->named_user, CLONE_NEWUSER) < 0)
			return err_sys(e, EXIT_CTRUN, "oci: joining the named container's user "
				       "namespace");
		if (unshare(CLONE_NEWNS) < 0)
			return err_sys(e, EXIT_CTRUN, "oci: cannot create a mount namespace");
	} else if (s->holder) {
		/* The image is mounted in the holder's namespaces: join them,
		 * then take a private copy of its mount namespace for the
		 * overlay (in its user namespace we may). */
		if (holder_join(s->holder_mnt, s->holder_user, e) < 0)
			return -1;
		if (unshare(CLONE_NEWNS) < 0)
			return err_sys(e, EXIT_CTRUN, "oci: cannot create a mount namespace");
	} else if (s->rootless) {
		if (userns_enter(s->uid, s->gid, e) < 0)
			return -1;
	} else if (unshare(CLONE_NEWNS) < 0) {
		return err_sys(e, EXIT_CTRUN, "oci: cannot create a mount namespace");
	}
	/* Nothing mounted from here on may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_sys(e, EXIT_CTRUN, "oci: making mounts private");
	if (p->hide_cgroup2 && hide_cgroup2(e) < 0)
		return -1;
	if (mount("tmpfs", p->ovl_tmp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		return err_sys(e, EXIT_CTRUN, "oci: tmpfs on %s", p->ovl_tmp);
	if (p->ovl_stage && stage(s, p, e) < 0)
		return -1;
	if (s->named_shared) {
		/* --name shared: the named container's one mounted root
		 * (namedroot.h), a copy of its mount attached here. */
		if (move_mount((int)s->named_tree, "", AT_FDCWD, p->ovl_merged,
			       MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return err_sys(e, EXIT_CTRUN, "oci: the named container's root on %s",
				       p->ovl_merged);
	} else if (s->named_upper != NULL) {
		/* --name to itself, --save: the kept layer on disk
		 * (images/cache/named.h), its lock held by ctrun for the whole run. */
		if (ovl_mount(p->ovl_lower, s->named_upper, s->named_work, p->ovl_merged, "overlay",
			      s->rootless, e) < 0)
			return -1;
	} else {
		if (xsnprintf(upper, sizeof(upper), "%s/upper", p->ovl_tmp) < 0 ||
		    xsnprintf(work, sizeof(work), "%s/work", p->ovl_tmp) < 0)
			return err_set(e, EXIT_CTRUN, "oci: path too long: %s", p->ovl_tmp);
		if (mkdir(upper, 0755) < 0 || mkdir(work, 0755) < 0)
			return err_sys(e, EXIT_CTRUN, "oci: overlay directories in %s", p->ovl_tmp);
		if (ovl_mount(p->ovl_lower, upper, work, p->ovl_merged, "overlay", s->rootless, e) < 0)
			return -1;
	}
	rootfd = open(p->ovl_merged, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_sys(e, EXIT_CTRUN, "oci: %s", p->ovl_merged);
	for (size_t i = 0; i < p->ovl_points.n; i++) {
		if (runtime_point(rootfd, &p->ovl_points.v[i], e) < 0) {
			close(rootfd);
			return -1;
		}
	}
	for (size_t i = 0; i < s->mounts.n; i++) {
		if (mount_point_provided(&s->mounts, i))
			continue;
		if (mount_point_create(rootfd, &s->mounts.v[i], e) < 0) {
			char msg[sizeof(e->msg)];

			if (s->rootless && (strstr(e->msg, "denied") != NULL ||
					    strstr(e->msg, "not permitted") != NULL)) {
				memcpy(msg, e->msg, sizeof(msg));
				err_set(e, EXIT_CTRUN, "%s (that image directory belongs to another "
					"user: choose a destination under /tmp or one that exists in "
					"the image)", msg);
			}
			close(rootfd);
			return -1;
		}
	}
	close(rootfd);
	return 0;
}
