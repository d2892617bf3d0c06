/* rootfs.c - walking paths inside a container root (see rootfs.h). */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define MAX_DEPTH 128 /* directories deep */
#define MAX_LINKS 40  /* symlinks followed per path, as the kernel's ELOOP */

int hook_fd_path(int fd, char *buf, size_t size)
{
	return xsnprintf(buf, size, "/proc/self/fd/%d", fd) < 0 ? -1 : 0;
}

int hook_root_open(const char *path, struct hook_root *r, struct err *e)
{
	struct stat st, host;

	r->path = path;
	r->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->fd < 0)
		return err_sys(e, EXIT_USAGE, "container root %s", path);
	if (fstat(r->fd, &st) < 0) {
		err_sys(e, EXIT_USAGE, "container root %s", path);
		hook_root_close(r);
		return -1;
	}
	/* The root itself must not be the host's "/": the hook would then bind
	 * into the host it is meant to protect. */
	if (stat("/", &host) == 0 && host.st_dev == st.st_dev && host.st_ino == st.st_ino) {
		hook_root_close(r);
		return err_set(e, EXIT_USAGE, "container root is the host's /");
	}
	return 0;
}

void hook_root_close(struct hook_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

struct walk {
	int stack[MAX_DEPTH + 1]; /* stack[0] = root; stack[depth] = current dir */
	size_t depth;
	char shown[PATH_MAX];     /* the current dir as the container sees it, for messages */
	char link[PATH_MAX];      /* the last symlink followed, for messages */
};

static void walk_close(struct walk *w, size_t keep_top)
{
	for (size_t i = 0; i <= w->depth; i++)
		if (!(keep_top && i == w->depth))
			close(w->stack[i]);
}

static void shown_pop(char *s)
{
	char *slash = strrchr(s, '/');

	if (slash != NULL)
		*slash = '\0';
}

/* Replaces the path still to walk with TARGET/REST after a relative symlink. */
static int splice_link(char *rest, size_t size, const char *target, const char *after)
{
	char tmp[PATH_MAX];

	if (xsnprintf(tmp, sizeof(tmp), "%s/%s", target, after) < 0)
		return -1;
	return xsnprintf(rest, size, "%s", tmp) < 0 ? -1 : 0;
}

/* One directory component: open it without following, follow a relative
 * symlink by splicing, refuse everything else that is not a directory. */
static int step(const struct hook_root *r, struct walk *w, const char *c, char *rest,
		const char *after, bool create, int *links, struct err *e)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t len;
	int fd;

	fd = openat(w->stack[w->depth], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(w->stack[w->depth], c, 0755) < 0 && errno != EEXIST)
			return err_sys(e, EXIT_CTRUN, "cannot create %s/%s in the image at %s",
				       w->shown, c, r->path);
		fd = openat(w->stack[w->depth], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0 || fstat(fd, &st) < 0) {
		err_sys(e, EXIT_CTRUN, "%s/%s in the image at %s", w->shown, c, r->path);
		goto fail;
	}
	if (S_ISLNK(st.st_mode)) {
		len = readlinkat(fd, "", target, sizeof(target) - 1);
		if (len < 0) {
			err_sys(e, EXIT_CTRUN, "readlink %s/%s in the image", w->shown, c);
			goto fail;
		}
		target[len] = '\0';
		close(fd);
		if (target[0] == '/')
			return err_set(e, EXIT_USAGE, "%s/%s in the image is a symlink to the absolute "
				       "path %s, which would leave the container root: refusing",
				       w->shown, c, target);
		if (++*links > MAX_LINKS)
			return err_set(e, EXIT_USAGE, "%s/%s in the image: too many levels of "
				       "symbolic links", w->shown, c);
		snprintf(w->link, sizeof(w->link), "%s/%s -> %s", w->shown, c, target);
		if (splice_link(rest, PATH_MAX, target, after) < 0)
			return err_set(e, EXIT_USAGE, "%s/%s in the image: link target too long",
				       w->shown, c);
		return 2;
	}
	if (!S_ISDIR(st.st_mode)) {
		err_set(e, EXIT_USAGE, "%s/%s in the image is not a directory", w->shown, c);
		goto fail;
	}
	if (w->depth >= MAX_DEPTH) {
		err_set(e, EXIT_USAGE, "%s/%s: path too deep", w->shown, c);
		goto fail;
	}
	if (strlen(w->shown) + strlen(c) + 2 > sizeof(w->shown)) {
		err_set(e, EXIT_USAGE, "%s/%s: path too long", w->shown, c);
		goto fail;
	}
	strcat(strcat(w->shown, "/"), c);
	w->stack[++w->depth] = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int hook_root_parent(const struct hook_root *r, const char *dst, bool create, int *dirfd,
		     char *leaf, size_t leaf_size, struct err *e)
{
	char rest[PATH_MAX], c[NAME_MAX + 1];
	struct walk w = { .depth = 0 }; /* shown and link start empty */
	int links = 0, ret;

	*dirfd = -1;
	if (dst[0] != '/' || xsnprintf(rest, sizeof(rest), "%s", dst + 1) < 0)
		return err_set(e, EXIT_CTRUN, "destination '%s' is not an absolute path", dst);
	w.stack[0] = openat(r->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w.stack[0] < 0)
		return err_sys(e, EXIT_CTRUN, "container root %s", r->path);
	for (;;) {
		char *p = rest + strspn(rest, "/"), *after;
		size_t len = strcspn(p, "/");

		if (len == 0)
			break; /* only slashes left: no leaf (a directory path) */
		if (len > NAME_MAX) {
			walk_close(&w, 0);
			return err_set(e, EXIT_USAGE, "%s: name too long", dst);
		}
		memcpy(c, p, len);
		c[len] = '\0';
		after = p + len;
		after += strspn(after, "/");
		if (*after == '\0') {
			/* The last name: the caller looks at it without following. */
			if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0)
				break;
			if (xsnprintf(leaf, leaf_size, "%s", c) < 0)
				break;
			*dirfd = w.stack[w.depth];
			walk_close(&w, 1);
			return 0;
		}
		if (strcmp(c, ".") == 0) {
			memmove(rest, after, strlen(after) + 1);
			continue;
		}
		if (strcmp(c, "..") == 0) {
			if (w.depth == 0) {
				walk_close(&w, 0);
				if (w.link[0] != '\0')
					return err_set(e, EXIT_USAGE, "the image's symlink %s climbs out "
						       "of the container root: refusing", w.link);
				return err_set(e, EXIT_USAGE, "'..' would leave the container root: "
					       "refusing");
			}
			close(w.stack[w.depth--]);
			shown_pop(w.shown);
			memmove(rest, after, strlen(after) + 1);
			continue;
		}
		{
			char tail[PATH_MAX];

			/* step() may splice a link target in front of what follows. */
			snprintf(tail, sizeof(tail), "%s", after);
			ret = step(r, &w, c, rest, tail, create, &links, e);
			if (ret < 0 || ret == 1) {
				walk_close(&w, 0);
				return ret;
			}
			if (ret == 0)
				memmove(rest, tail, strlen(tail) + 1);
		}
	}
	walk_close(&w, 0);
	return err_set(e, EXIT_CTRUN, "destination '%s' has no file name", dst);
}
