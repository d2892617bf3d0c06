/* pathwalk.c - the walk of a path inside a root over a back end (see
 * pathwalk.h).  Each component is looked up without following it: a
 * symlink is read through what the lookup holds and its target put in
 * front of what is left to walk, so nothing can be swapped in between a
 * check and its use. */
#include "pathwalk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_LINKS 40 /* symlinks per path, as the kernel's ELOOP */

int pathwalk_fail(struct err *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e != NULL) {
		e->code = EXIT_CTRUN;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	errno = err;
	return -1;
}

int pathwalk_fail_sys(struct err *e, const char *what, const char *dir, const char *name)
{
	int saved = errno;

	if (e != NULL)
		err_sys(e, EXIT_CTRUN, "%s%s%s/%s in the image", what, *what != '\0' ? " " : "", dir,
			name);
	errno = saved;
	return -1;
}

/* Appends "/name" to the directory as shown. */
static int shown_add(struct pathwalk *w, const char *name, struct err *e)
{
	size_t len = strlen(w->shown);

	if (len + 1 + strlen(name) >= sizeof(w->shown))
		return pathwalk_fail(e, ENAMETOOLONG, "%s/%s: path too long", w->shown, name);
	snprintf(w->shown + len, sizeof(w->shown) - len, "/%s", name);
	return 0;
}

/* Enters the held directory `name`. */
static int push(struct pathwalk *w, const char *name, struct err *e)
{
	if (strlen(w->shown) + 1 + strlen(name) >= sizeof(w->shown)) {
		w->ops->drop(w->be);
		return shown_add(w, name, e);
	}
	if (w->ops->enter(w->be) < 0)
		return pathwalk_fail(e, errno, "%s/%s: out of memory", w->shown, name);
	w->depth++;
	return shown_add(w, name, e);
}

static void pop(struct pathwalk *w)
{
	char *slash = strrchr(w->shown, '/');

	if (slash != NULL)
		*slash = '\0';
	if (w->virt > 0) {
		w->virt--;
		return;
	}
	w->ops->up(w->be);
	w->depth--;
}

static void pop_all(struct pathwalk *w)
{
	w->ops->to_root(w->be);
	w->depth = 0;
	w->virt = 0;
	w->shown[0] = '\0';
}

/* A ".." component: up one directory, or at the root stay there (a
 * chroot's rule) or refuse. */
static int climb(struct pathwalk *w, struct err *e)
{
	if (w->depth > 0 || w->virt > 0)
		pop(w);
	else if (w->beneath && w->link[0] != '\0')
		return pathwalk_fail(e, EXDEV, "the image's symlink %s climbs out of the container "
				     "root: refusing", w->link);
	else if (w->beneath)
		return pathwalk_fail(e, EXDEV, "'..' would leave the container root: refusing");
	return 0;
}

/* The held symlink `name` in the current directory: its target goes in
 * front of `rest`.  0 to go on, -1 with e. */
static int follow(struct pathwalk *w, const char *name, const char *rest, struct err *e)
{
	char target[PATH_MAX], tmp[sizeof(w->todo)];

	if (w->ops->readlink(w->be, target, sizeof(target)) < 0)
		return pathwalk_fail_sys(e, "readlink", w->shown, name);
	if (w->no_links)
		return pathwalk_fail(e, ELOOP, "%s/%s in the image is a symlink (to %s): refusing",
				     w->shown, name, target);
	if (++w->links > MAX_LINKS)
		return pathwalk_fail(e, ELOOP, "%s/%s in the image: too many levels of symbolic "
				     "links", w->shown, name);
	if (target[0] == '/') {
		if (w->beneath)
			return pathwalk_fail(e, EXDEV, "%s/%s in the image is a symlink to the "
					     "absolute path %s, which would leave the container "
					     "root: refusing", w->shown, name, target);
		pop_all(w);
	} else {
		snprintf(w->link, sizeof(w->link), "%s/%s -> %s", w->shown, name, target);
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", target, rest) >= sizeof(tmp))
		return pathwalk_fail(e, ENAMETOOLONG, "%s/%s in the image: link target %s too long",
				     w->shown, name, target);
	memcpy(w->todo, tmp, sizeof(w->todo));
	return 0;
}

/* The name c as the last component: into leaf. */
static int set_leaf(struct pathwalk *w, const char *c, char *leaf, size_t leaf_size,
		    struct err *e)
{
	snprintf(leaf, leaf_size, "%s", c);
	return strlen(c) < leaf_size ? 0 : pathwalk_fail(e, ENAMETOOLONG, "%s/%s: name too long",
							 w->shown, c);
}

/* Looks up component c (not the last one when !last); a missing one made
 * (create) or kept as text (missing_ok: 1, the walk goes on).  0 with the
 * child held and *type, 1 when there is nothing to hold, -1 with e. */
static int look(struct pathwalk *w, const char *c, bool last, mode_t *type, struct err *e)
{
	int r = w->ops->lookup(w->be, c, type);

	if (r < 0 && errno == ENOENT && !last) {
		if (w->create) {
			if (w->ops->mkdir(w->be, c, w->mode) < 0 && errno != EEXIST)
				return pathwalk_fail_sys(e, "cannot create", w->shown, c);
			r = w->ops->lookup(w->be, c, type);
		} else if (w->missing_ok) {
			if (shown_add(w, c, e) < 0)
				return -1;
			w->virt++;
			return 1;
		}
	}
	if (r < 0 && errno == ENOENT && last)
		return 1; /* the caller may create it */
	return r < 0 ? pathwalk_fail_sys(e, "", w->shown, c) : 0;
}

int pathwalk_run(struct pathwalk *w, const char *path, char *leaf, size_t leaf_size,
		 struct err *e)
{
	w->depth = w->virt = 0;
	w->links = 0;
	w->shown[0] = w->link[0] = '\0';
	if ((size_t)snprintf(w->todo, sizeof(w->todo), "%s", path) >= sizeof(w->todo))
		return pathwalk_fail(e, ENAMETOOLONG, "%s: path too long", path);
	for (;;) {
		char c[NAME_MAX + 1], rest[sizeof(w->todo)];
		const char *p = w->todo + strspn(w->todo, "/"), *after;
		size_t len = strcspn(p, "/");
		mode_t type;
		bool last;
		int r;

		if (len == 0) {
			leaf[0] = '\0';
			return 0;
		}
		if (len > NAME_MAX)
			return pathwalk_fail(e, ENAMETOOLONG, "%s/%.*s...: name too long", w->shown,
					     32, p);
		memcpy(c, p, len);
		c[len] = '\0';
		after = p + len + strspn(p + len, "/");
		last = *after == '\0';
		memmove(rest, after, strlen(after) + 1);
		memcpy(w->todo, rest, strlen(rest) + 1);
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (climb(w, e) < 0)
				return -1;
			continue;
		}
		if (w->virt > 0) { /* below a missing directory: text only */
			if (shown_add(w, c, e) < 0)
				return -1;
			w->virt++;
			continue;
		}
		if (last && !w->follow_last)
			return set_leaf(w, c, leaf, leaf_size, e);
		r = look(w, c, last, &type, e);
		if (r < 0)
			return -1;
		if (r > 0 && last)
			return set_leaf(w, c, leaf, leaf_size, e);
		if (r > 0)
			continue;
		if (type == S_IFLNK) {
			if (follow(w, c, rest, e) < 0)
				return -1;
			continue;
		}
		if (last) {
			w->ops->drop(w->be);
			return set_leaf(w, c, leaf, leaf_size, e);
		}
		if (type != S_IFDIR) {
			w->ops->drop(w->be);
			return pathwalk_fail(e, ENOTDIR, "%s/%s in the image is not a directory",
					     w->shown, c);
		}
		if (push(w, c, e) < 0)
			return -1;
	}
}

int pathwalk_result(const struct pathwalk *w, const char *leaf, char *out, size_t size,
		    struct err *e)
{
	int n;

	/* shown is "" or "/a/b": the relative form drops its slash. */
	if (w->shown[0] == '\0')
		n = snprintf(out, size, "%s", leaf[0] != '\0' ? leaf : ".");
	else
		n = snprintf(out, size, "%s%s%s", w->shown + 1, leaf[0] != '\0' ? "/" : "", leaf);
	return n >= 0 && (size_t)n < size ? 0 : pathwalk_fail(e, ENAMETOOLONG,
							       "%s/%s: path too long", w->shown,
							       leaf);
}
