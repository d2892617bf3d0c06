/* plan.c - checking and applying the hook's binds (see plan.h). */
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "inroot.h"
#include "util.h"

static const char *kind_name(enum hook_item_kind k)
{
	switch (k) {
	case HOOK_ITEM_DEV:
		return "device";
	case HOOK_ITEM_FILE:
		return "file";
	case HOOK_ITEM_IPC:
		return "socket";
	case HOOK_ITEM_LINK:
		return "link";
	case HOOK_ITEM_PROC:
		return "proc file";
	case HOOK_ITEM_TMPFS:
		return "tmpfs";
	case HOOK_ITEM_DATA:
		return "file";
	}
	return "item";
}

bool hook_plan_has(const struct hook_plan *p, const char *dst)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i].dst, dst) == 0)
			return true;
	return false;
}

int hook_plan_add(struct hook_plan *p, enum hook_item_kind kind, const char *src,
		  const char *dst, struct err *e)
{
	struct hook_item it = { .kind = kind, .srcfd = -1, .parentfd = -1, .topfd = -1 };
	struct stat st;
	bool ok;

	if (hook_plan_has(p, dst))
		return 0;
	if (strpbrk(dst, " \t\n") != NULL || (kind != HOOK_ITEM_LINK && strpbrk(src, " \t\n")))
		return err_set(e, EXIT_CTRUN, "%s: white space in a path is not supported", dst);
	if (kind != HOOK_ITEM_LINK && kind != HOOK_ITEM_TMPFS && kind != HOOK_ITEM_DATA) {
		it.srcfd = open(src, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (it.srcfd < 0 || fstat(it.srcfd, &st) < 0) {
			err_sys(e, EXIT_CTRUN, "host %s %s", kind_name(kind), src);
			goto fail;
		}
		ok = kind == HOOK_ITEM_DEV ? S_ISCHR(st.st_mode)
		   : kind == HOOK_ITEM_FILE ? S_ISREG(st.st_mode)
		   : kind == HOOK_ITEM_PROC ? S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)
		   : S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode);
		if (!ok) {
			err_set(e, EXIT_CTRUN, "host %s %s has the wrong file type", kind_name(kind),
				src);
			goto fail;
		}
		it.isdir = S_ISDIR(st.st_mode);
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct hook_item *v = realloc(p->v, cap * sizeof(*v));

		if (v == NULL) {
			err_sys(e, EXIT_CTRUN, "plan");
			goto fail;
		}
		p->v = v;
		p->cap = cap;
	}
	it.src = strdup(src);
	it.dst = strdup(dst);
	if (it.src == NULL || it.dst == NULL) {
		err_sys(e, EXIT_CTRUN, "plan");
		free(it.src);
		free(it.dst);
		goto fail;
	}
	p->v[p->n++] = it;
	return 0;
fail:
	if (it.srcfd >= 0)
		close(it.srcfd);
	return -1;
}

int hook_plan_data(struct hook_plan *p, const char *dst, const char *data, size_t len,
		   struct err *e)
{
	struct hook_item *it;
	char *copy;

	if (hook_plan_has(p, dst))
		return 0;
	copy = malloc(len + 1);
	if (copy == NULL)
		return err_sys(e, EXIT_CTRUN, "plan");
	memcpy(copy, data, len);
	copy[len] = '\0';
	if (hook_plan_add(p, HOOK_ITEM_DATA, "data", dst, e) < 0) {
		free(copy);
		return -1;
	}
	it = &p->v[p->n - 1];
	it->data = copy;
	it->len = len;
	return 0;
}

/* What may already sit at an item's destination in the image: a file we
 * can bind over (runc's own /dev/nvidia0 node, a library of the same
 * name), or a symlink we replace for LINK items.  A symlink where a bind
 * goes would be followed by mount(2): refused. */
static int leaf_ok(const struct hook_item *it, const struct stat *st, struct err *e)
{
	bool ok;

	switch (it->kind) {
	case HOOK_ITEM_DEV:
		ok = S_ISCHR(st->st_mode) || S_ISREG(st->st_mode);
		break;
	case HOOK_ITEM_FILE:
		ok = S_ISREG(st->st_mode);
		break;
	case HOOK_ITEM_IPC:
		ok = it->isdir ? S_ISDIR(st->st_mode) : S_ISREG(st->st_mode) || S_ISSOCK(st->st_mode);
		break;
	case HOOK_ITEM_PROC:
		ok = it->isdir ? S_ISDIR(st->st_mode) : S_ISREG(st->st_mode);
		break;
	case HOOK_ITEM_TMPFS:
		ok = S_ISDIR(st->st_mode);
		break;
	case HOOK_ITEM_DATA:
		ok = S_ISREG(st->st_mode); /* the file the tmpfs will hide */
		break;
	default:
		ok = S_ISLNK(st->st_mode) || S_ISREG(st->st_mode);
		break;
	}
	if (ok)
		return 0;
	return err_set(e, EXIT_USAGE, "%s in the image is a %s, not a place for the host's %s: "
		       "refusing", it->dst, S_ISLNK(st->st_mode) ? "symlink"
		       : S_ISDIR(st->st_mode) ? "directory" : "special file", kind_name(it->kind));
}

/* Libraries, tools and their links go into the image's own directories:
 * never where the directory is another mount (bound from the host), which
 * a relative link inside the root can lead to.  Devices go to the
 * runtime's /dev and IPC endpoints to their own paths (/run, /tmp), which
 * are mounts of their own by design. */
static int own_directory(const struct hook_item *it, const struct hook_root *r, int dfd,
			 struct err *e)
{
	bool same;

	if (it->kind != HOOK_ITEM_FILE && it->kind != HOOK_ITEM_LINK)
		return 0;
	if (hook_root_same_mount(r, dfd, &same, e) < 0)
		return -1;
	if (!same)
		return err_set(e, EXIT_USAGE, "the directory of %s in the image lies on another "
			       "mount than the container's root (a directory bound from the host?): "
			       "refusing to put the host's %s there", it->dst, kind_name(it->kind));
	return 0;
}

/* A destination whose directories are missing: they will be made below
 * the deepest one that exists, which must then be the image's own. */
static int deepest_own(const struct hook_item *it, const struct hook_root *r, struct err *e)
{
	char path[PATH_MAX], *slash;

	if ((it->kind != HOOK_ITEM_FILE && it->kind != HOOK_ITEM_LINK) ||
	    snprintf(path, sizeof(path), "%s", it->dst) >= (int)sizeof(path))
		return 0;
	while ((slash = strrchr(path, '/')) != NULL && slash != path) {
		int fd, rv;

		*slash = '\0';
		fd = inroot_open(r->fd, path, O_PATH | O_DIRECTORY, 0, INROOT_BENEATH, NULL);
		if (fd < 0)
			continue;
		rv = own_directory(it, r, fd, e);
		close(fd);
		return rv;
	}
	return 0; /* made in the root itself */
}

/* A DATA item goes only into a tmpfs the plan mounts before it: never
 * into the image or a directory of the host. */
static bool in_planned_tmpfs(const struct hook_plan *p, size_t i)
{
	for (size_t k = 0; k < i; k++) {
		size_t len = strlen(p->v[k].dst);

		if (p->v[k].kind == HOOK_ITEM_TMPFS && strncmp(p->v[i].dst, p->v[k].dst, len) == 0 &&
		    p->v[i].dst[len] == '/')
			return true;
	}
	return false;
}

int hook_plan_check(struct hook_plan *p, const struct hook_root *r, struct err *e)
{
	for (size_t i = 0; i < p->n; i++) {
		struct hook_item *it = &p->v[i];
		char leaf[NAME_MAX + 1];
		struct stat st;
		int dfd, ret;

		if (it->kind == HOOK_ITEM_DATA && !in_planned_tmpfs(p, i))
			return err_set(e, EXIT_CTRUN, "%s: a file the hook writes must lie in a "
				       "tmpfs it mounts", it->dst);
		ret = hook_root_parent(r, it->dst, false, &dfd, leaf, sizeof(leaf), e);
		if (ret < 0)
			return err_wrap(e, "%s %s", kind_name(it->kind), it->dst);
		if (ret == 1 && it->kind == HOOK_ITEM_TMPFS)
			return err_set(e, EXIT_CTRUN, "%s is not a directory of the container",
				       it->dst);
		if (ret == 1) { /* a directory is missing: created on apply */
			if (deepest_own(it, r, e) < 0)
				return -1;
			continue;
		}
		if (own_directory(it, r, dfd, e) < 0) {
			close(dfd);
			return -1;
		}
		ret = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW);
		close(dfd);
		if (ret < 0 && (errno != ENOENT || it->kind == HOOK_ITEM_TMPFS))
			return err_sys(e, EXIT_CTRUN, "%s in the container", it->dst);
		if (ret == 0 && leaf_ok(it, &st, e) < 0)
			return -1;
	}
	return 0;
}

/* The mount flags the source mount already has: in a user namespace they
 * are locked, and a remount that drops one fails with EPERM. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

static int make_leaf(struct hook_item *it, struct err *e)
{
	struct stat st;
	int fd;

	if (fstatat(it->parentfd, it->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return leaf_ok(it, &st, e);
	if (errno != ENOENT || it->kind == HOOK_ITEM_TMPFS)
		return err_sys(e, EXIT_CTRUN, "%s in the container", it->dst);
	if (it->isdir)
		fd = mkdirat(it->parentfd, it->leaf, 0755);
	else
		fd = openat(it->parentfd, it->leaf,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "cannot create %s in the image (the hook needs a "
			       "writable root)", it->dst);
	if (!it->isdir)
		close(fd);
	it->created = true;
	return 0;
}

static int bind_item(struct hook_item *it, struct err *e)
{
	char src[64], dst[64], top[64];
	unsigned long flags;
	int dfd;

	dfd = openat(it->parentfd, it->leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return err_sys(e, EXIT_CTRUN, "%s in the image", it->dst);
	if (hook_fd_path(it->srcfd, src, sizeof(src)) < 0 ||
	    hook_fd_path(dfd, dst, sizeof(dst)) < 0 ||
	    mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		err_sys(e, EXIT_CTRUN, "bind %s to %s in the container", it->src, it->dst);
		close(dfd);
		return -1;
	}
	close(dfd);
	/* The fd we mounted onto still names the file underneath; the mount
	 * itself is what the name resolves to now. */
	it->topfd = openat(it->parentfd, it->leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (it->topfd < 0 || hook_fd_path(it->topfd, top, sizeof(top)) < 0)
		return err_sys(e, EXIT_CTRUN, "%s in the container after mounting", it->dst);
	flags = it->kind == HOOK_ITEM_DEV ? MS_RDONLY | MS_NOSUID | MS_NOEXEC
	      : it->kind == HOOK_ITEM_FILE ? MS_RDONLY | MS_NOSUID | MS_NODEV
	      : it->kind == HOOK_ITEM_PROC ? MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
	      : MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (mount(NULL, top, NULL, MS_BIND | MS_REMOUNT | flags | locked_flags(top), NULL) < 0)
		return err_sys(e, EXIT_CTRUN, "remount %s in the container", it->dst);
	return 0;
}

/* The tmpfs over an existing directory, as libnvidia-container masks
 * /proc/driver/nvidia: root's, mode 0555. */
static int tmpfs_item(struct hook_item *it, struct err *e)
{
	char dst[64];
	int dfd = openat(it->parentfd, it->leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return err_sys(e, EXIT_CTRUN, "%s in the container", it->dst);
	if (hook_fd_path(dfd, dst, sizeof(dst)) < 0 ||
	    mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555") < 0) {
		err_sys(e, EXIT_CTRUN, "mount a tmpfs on %s in the container", it->dst);
		close(dfd);
		return -1;
	}
	close(dfd);
	it->topfd = openat(it->parentfd, it->leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (it->topfd < 0)
		return err_sys(e, EXIT_CTRUN, "%s in the container after mounting", it->dst);
	return 0;
}

static int data_item(struct hook_item *it, struct err *e)
{
	int fd = openat(it->parentfd, it->leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0444);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "create %s in the container", it->dst);
	it->created = true;
	if (write_all(fd, it->data, it->len) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "write %s in the container", it->dst);
	}
	close(fd);
	return 0;
}

static int link_item(struct hook_item *it, struct err *e)
{
	struct stat st;

	if (fstatat(it->parentfd, it->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (leaf_ok(it, &st, e) < 0)
			return -1;
		if (unlinkat(it->parentfd, it->leaf, 0) < 0)
			return err_sys(e, EXIT_CTRUN, "replace %s in the image", it->dst);
	}
	if (symlinkat(it->src, it->parentfd, it->leaf) < 0)
		return err_sys(e, EXIT_CTRUN, "symlink %s -> %s in the image", it->dst, it->src);
	it->created = true;
	return 0;
}

static void rollback(struct hook_plan *p)
{
	for (size_t i = p->n; i-- > 0;) {
		struct hook_item *it = &p->v[i];
		char top[64];

		if (it->topfd >= 0 && hook_fd_path(it->topfd, top, sizeof(top)) == 0)
			umount2(top, MNT_DETACH);
		if (it->created && it->parentfd >= 0)
			unlinkat(it->parentfd, it->leaf, it->isdir ? AT_REMOVEDIR : 0);
		it->created = false;
	}
}

static int apply_one(struct hook_plan *p, struct hook_item *it, const struct hook_root *r,
		     struct err *e)
{
	if (hook_root_parent(r, it->dst, true, &it->parentfd, it->leaf, sizeof(it->leaf), e) != 0)
		return err_wrap(e, "%s %s", kind_name(it->kind), it->dst);
	if (own_directory(it, r, it->parentfd, e) < 0)
		return -1;
	if (it->kind == HOOK_ITEM_LINK) {
		if (link_item(it, e) < 0)
			return -1;
	} else if (it->kind == HOOK_ITEM_TMPFS) {
		if (make_leaf(it, e) < 0 || tmpfs_item(it, e) < 0)
			return -1;
	} else if (it->kind == HOOK_ITEM_DATA) {
		if (data_item(it, e) < 0)
			return -1;
	} else if (make_leaf(it, e) < 0 || bind_item(it, e) < 0) {
		return -1;
	}
	if (p->verbose)
		fprintf(stderr, "ctrun-hook: %s %s%s%s\n",
			it->kind == HOOK_ITEM_LINK ? "symlink" : it->kind == HOOK_ITEM_TMPFS ? "tmpfs"
			: it->kind == HOOK_ITEM_DATA ? "write" : "bind", it->dst,
			it->kind == HOOK_ITEM_TMPFS || it->kind == HOOK_ITEM_DATA ? "" : " -> ",
			it->kind == HOOK_ITEM_TMPFS || it->kind == HOOK_ITEM_DATA ? "" : it->src);
	return 0;
}

int hook_plan_apply(struct hook_plan *p, const struct hook_root *r, struct err *e)
{
	/* Binds first, links last: a link is the only step that replaces
	 * something of the image, so it happens once everything else worked. */
	for (int links = 0; links < 2; links++) {
		for (size_t i = 0; i < p->n; i++) {
			struct hook_item *it = &p->v[i];

			if ((it->kind == HOOK_ITEM_LINK) != (links == 1))
				continue;
			if (apply_one(p, it, r, e) < 0) {
				rollback(p);
				return -1;
			}
		}
	}
	return 0;
}

void hook_plan_free(struct hook_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct hook_item *it = &p->v[i];

		free(it->src);
		free(it->dst);
		free(it->data);
		if (it->srcfd >= 0)
			close(it->srcfd);
		if (it->parentfd >= 0)
			close(it->parentfd);
		if (it->topfd >= 0)
			close(it->topfd);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}
