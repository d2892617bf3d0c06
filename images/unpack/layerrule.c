/* layerrule.c - what one layer member does (see layerrule.h). */
#include "layerrule.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "rootpath.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* "dir" + "/" + "base", or "base" when dir is the root. */
static int join(char *out, size_t size, const char *dir, const char *base)
{
	int r = strcmp(dir, ".") == 0 ? snprintf(out, size, "%s", base)
				      : snprintf(out, size, "%s/%s", dir, base);

	return r < 0 || (size_t)r >= size ? -1 : 0;
}

/* A cleaned path's resolved parent (into parent) and its last component. */
static int resolve_parent(layer_resolve_fn resolve, void *arg, const char *clean, char *parent,
			  size_t size, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(clean, '/');

	if (slash == NULL) {
		*base = clean;
		return snprintf(parent, size, ".") == 1 ? 0 : -1;
	}
	if ((size_t)(slash - clean) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, clean, (size_t)(slash - clean));
	dir[slash - clean] = '\0';
	*base = slash + 1;
	return resolve(arg, dir, parent, size);
}

/* A whiteout member (its last component `base` starts with .wh.) in the
 * resolved directory `parent`. */
static int whiteout(const char *name, const char *parent, const char *base, const char *what,
		    struct layer_decision *d, struct err *e)
{
	if (strcmp(base, WH_OPAQUE) == 0) {
		d->action = LAYER_OPAQUE;
		snprintf(d->path, sizeof(d->path), "%s", parent); /* parent is as long at most */
		return 0;
	}
	base += strlen(WH_PREFIX);
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
	    join(d->path, sizeof(d->path), parent, base) < 0)
		return err_set(e, EXIT_CTRUN, "%s: bad whiteout '%s'", what, name);
	d->action = LAYER_WHITEOUT;
	return 0;
}

/* A hard link's target, resolved inside the root into d->link. */
static int hard_link(const struct layer_member *m, layer_resolve_fn resolve, void *arg,
		     const char *what, struct layer_decision *d, struct err *e)
{
	char lclean[PATH_MAX], lparent[PATH_MAX];
	const char *lbase;

	if (rootpath_clean(m->hardlink, lclean, sizeof(lclean)) < 0 || strcmp(lclean, ".") == 0)
		return err_set(e, EXIT_CTRUN, "%s: hard link '%s' -> '%s' leaves the image: refused",
			       what, m->name, m->hardlink);
	if (resolve_parent(resolve, arg, lclean, lparent, sizeof(lparent), &lbase) < 0 ||
	    join(d->link, sizeof(d->link), lparent, lbase) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: resolving hard link '%s'", what, m->hardlink);
	d->action = LAYER_LINK;
	return 0;
}

int layer_decide(const struct layer_member *m, layer_resolve_fn resolve, void *arg,
		 bool name_max, const char *what, struct layer_decision *d, struct err *e)
{
	char clean[PATH_MAX], parent[PATH_MAX];
	const char *base;

	d->action = LAYER_SKIP;
	d->path[0] = d->link[0] = '\0';
	d->base = NULL;
	if (rootpath_clean(m->name, clean, sizeof(clean)) < 0)
		return err_set(e, EXIT_CTRUN, "%s: member '%s' %s", what, m->name,
			       errno == EINVAL ? "leaves the image (..): refused" : "has a bad name");
	if (strcmp(clean, ".") == 0)
		return 0; /* the root's own entry: its mode is the image's business */
	if (resolve_parent(resolve, arg, clean, parent, sizeof(parent), &base) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: resolving '%s'", what, m->name);
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0)
		return whiteout(m->name, parent, base, what, d, e);
	if (join(d->path, sizeof(d->path), parent, base) < 0 ||
	    (name_max && strlen(base) > NAME_MAX))
		return err_set(e, EXIT_CTRUN, "%s: path too long: '%s'", what, m->name);
	d->base = d->path + strlen(d->path) - strlen(base);
	/* No device node from an image (image_sanitize): the runtime provides /dev. */
	if (m->type == S_IFCHR || m->type == S_IFBLK)
		return 0;
	if (m->hardlink != NULL)
		return hard_link(m, resolve, arg, what, d, e);
	d->action = LAYER_PUT;
	return 0;
}
