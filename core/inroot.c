/* inroot.c - paths resolved inside a root directory (see inroot.h).
 *
 * The walk keeps a stack of O_PATH descriptors, one per directory from the
 * root down, and opens each component with O_NOFOLLOW: a symlink is read
 * through its own descriptor and its target put in front of what is left to
 * walk, so nothing can be swapped in between a check and its use. */
#include "inroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_LINKS 40 /* symlinks per path, as the kernel's ELOOP */

static bool openat2_on = true;

void inroot_use_openat2(bool on)
{
	openat2_on = on;
}

/* openat2 with the policy's RESOLVE_ flags; -1 with ENOSYS where there is none. */
static int try_openat2(int rootfd, const char *path, int flags, mode_t mode,
		       enum inroot_policy pol)
{
#ifdef SYS_openat2
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0,
		.resolve = (pol == INROOT_CHROOT ? RESOLVE_IN_ROOT : RESOLVE_BENEATH) |
			   (pol == INROOT_NO_LINKS ? RESOLVE_NO_SYMLINKS : 0) | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!openat2_on) {
		errno = ENOSYS;
		return -1;
	}
	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		openat2_on = false; /* not this kernel: never ask again */
	return fd;
#else
	(void)rootfd, (void)path, (void)flags, (void)mode, (void)pol;
	errno = ENOSYS;
	return -1;
#endif
}

struct walk {
	enum inroot_policy pol;
	bool follow_last;     /* resolve a symlink in the last component too */
	bool create;          /* make missing directories */
	bool missing_ok;      /* keep missing components as text (inroot_resolve) */
	mode_t mode;
	int *fds;             /* fds[0] = the root; fds[depth] = the current directory */
	size_t depth, cap;
	size_t virt;          /* components in `shown` that do not exist (missing_ok) */
	int links;
	char shown[PATH_MAX]; /* the current directory as the container sees it ("" = /) */
	char link[PATH_MAX];  /* the last symlink followed, "/lib -> ../x", for messages */
	char todo[PATH_MAX * 2];
};

static void walk_free(struct walk *w)
{
	for (size_t i = 0; w->fds != NULL && i <= w->depth; i++)
		close(w->fds[i]);
	free(w->fds);
	w->fds = NULL;
}

static int fail(struct err *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct err *e, int err, const char *fmt, ...)
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

static int fail_sys(struct err *e, const char *what, const char *dir, const char *name)
{
	int saved = errno;

	if (e != NULL)
		err_sys(e, EXIT_CTRUN, "%s%s%s/%s in the image", what, *what != '\0' ? " " : "", dir,
			name);
	errno = saved;
	return -1;
}

/* Appends "/name" to the directory as shown. */
static int shown_add(struct walk *w, const char *name, struct err *e)
{
	size_t len = strlen(w->shown);

	if (len + 1 + strlen(name) >= sizeof(w->shown))
		return fail(e, ENAMETOOLONG, "%s/%s: path too long", w->shown, name);
	snprintf(w->shown + len, sizeof(w->shown) - len, "/%s", name);
	return 0;
}

/* Enters directory `name`, open as fd (consumed). */
static int push(struct walk *w, int fd, const char *name, struct err *e)
{
	if (w->depth + 1 >= w->cap) {
		size_t cap = w->cap * 2;
		int *fds = realloc(w->fds, cap * sizeof(*fds));

		if (fds == NULL) {
			close(fd);
			return fail(e, ENOMEM, "%s/%s: out of memory", w->shown, name);
		}
		w->fds = fds;
		w->cap = cap;
	}
	if (shown_add(w, name, e) < 0) {
		close(fd);
		return -1;
	}
	w->fds[++w->depth] = fd;
	return 0;
}

static void pop(struct walk *w)
{
	char *slash = strrchr(w->shown, '/');

	if (slash != NULL)
		*slash = '\0';
	if (w->virt > 0) {
		w->virt--;
		return;
	}
	close(w->fds[w->depth--]);
}

static void pop_all(struct walk *w)
{
	while (w->depth > 0)
		close(w->fds[w->depth--]);
	w->virt = 0;
	w->shown[0] = '\0';
}

/* A symlink `name` in the current directory, open as fd: its target goes in
 * front of `rest`.  0 to go on, -1 with e. */
static int follow(struct walk *w, int fd, const char *name, const char *rest, struct err *e)
{
	char target[PATH_MAX], tmp[sizeof(w->todo)];
	ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);

	close(fd);
	if (n < 0)
		return fail_sys(e, "readlink", w->shown, name);
	target[n] = '\0';
	if (w->pol == INROOT_NO_LINKS)
		return fail(e, ELOOP, "%s/%s in the image is a symlink (to %s): refusing", w->shown,
			    name, target);
	if (++w->links > MAX_LINKS)
		return fail(e, ELOOP, "%s/%s in the image: too many levels of symbolic links",
			    w->shown, name);
	if (target[0] == '/') {
		if (w->pol != INROOT_CHROOT)
			return fail(e, EXDEV, "%s/%s in the image is a symlink to the absolute path "
				    "%s, which would leave the container root: refusing", w->shown,
				    name, target);
		pop_all(w);
	} else {
		snprintf(w->link, sizeof(w->link), "%s/%s -> %s", w->shown, name, target);
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", target, rest) >= sizeof(tmp))
		return fail(e, ENAMETOOLONG, "%s/%s in the image: link target %s too long", w->shown,
			    name, target);
	memcpy(w->todo, tmp, sizeof(w->todo));
	return 0;
}

/* The walk of `path` starts at rootfd (w->fds[0]).  -1 with errno and e. */
static int walk_begin(struct walk *w, int rootfd, const char *path, struct err *e)
{
	w->cap = 16;
	w->depth = 0;
	w->fds = malloc(w->cap * sizeof(*w->fds));
	if (w->fds == NULL)
		return fail(e, ENOMEM, "out of memory");
	w->fds[0] = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->fds[0] < 0) {
		int saved = errno;

		free(w->fds);
		w->fds = NULL;
		errno = saved;
		return e != NULL ? err_sys(e, EXIT_CTRUN, "the image's root") : -1;
	}
	if ((size_t)snprintf(w->todo, sizeof(w->todo), "%s", path) >= sizeof(w->todo))
		return fail(e, ENAMETOOLONG, "%s: path too long", path);
	return 0;
}

/* A ".." component: up one directory, or refused at the root (unless the
 * policy is a chroot's, where ".." of the root is the root). */
static int climb(struct walk *w, struct err *e)
{
	if (w->depth > 0 || w->virt > 0)
		pop(w);
	else if (w->pol != INROOT_CHROOT && w->link[0] != '\0')
		return fail(e, EXDEV, "the image's symlink %s climbs out of the container root: "
			    "refusing", w->link);
	else if (w->pol != INROOT_CHROOT)
		return fail(e, EXDEV, "'..' would leave the container root: refusing");
	return 0;
}

/* Walks `path` to its last component: w->fds[w->depth] is the directory
 * that holds it, `leaf` its name ("" when the path ends at a directory).
 * With follow_last a symlink there is followed first.  -1 with errno and e. */
static int walk(struct walk *w, int rootfd, const char *path, char *leaf, size_t leaf_size,
		struct err *e)
{
	if (walk_begin(w, rootfd, path, e) < 0)
		return -1;
	for (;;) {
		char c[NAME_MAX + 1], rest[sizeof(w->todo)];
		const char *p = w->todo + strspn(w->todo, "/"), *after;
		size_t len = strcspn(p, "/");
		struct stat st;
		bool last;
		int fd;

		if (len == 0) {
			leaf[0] = '\0';
			return 0;
		}
		if (len > NAME_MAX)
			return fail(e, ENAMETOOLONG, "%s/%.*s...: name too long", w->shown, 32, p);
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
		if (last && !w->follow_last) {
			snprintf(leaf, leaf_size, "%s", c);
			return strlen(c) < leaf_size ? 0 : fail(e, ENAMETOOLONG, "%s/%s: name too long",
								   w->shown, c);
		}
		fd = openat(w->fds[w->depth], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && !last) {
			if (w->create) {
				if (mkdirat(w->fds[w->depth], c, w->mode) < 0 && errno != EEXIST)
					return fail_sys(e, "cannot create", w->shown, c);
				fd = openat(w->fds[w->depth], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			} else if (w->missing_ok) {
				if (shown_add(w, c, e) < 0)
					return -1;
				w->virt++;
				continue;
			}
		}
		if (fd < 0 && errno == ENOENT && last) {
			snprintf(leaf, leaf_size, "%s", c); /* the caller may create it */
			return 0;
		}
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			return fail_sys(e, "", w->shown, c);
		}
		if (S_ISLNK(st.st_mode)) {
			if (follow(w, fd, c, rest, e) < 0)
				return -1;
			continue;
		}
		if (last) {
			close(fd);
			snprintf(leaf, leaf_size, "%s", c);
			return strlen(c) < leaf_size ? 0 : fail(e, ENAMETOOLONG, "%s/%s: name too long",
								   w->shown, c);
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			return fail(e, ENOTDIR, "%s/%s in the image is not a directory", w->shown, c);
		}
		if (push(w, fd, c, e) < 0)
			return -1;
	}
}

/* What is left to walk, without the leading slashes: the container's "/x"
 * is the root's "x", and openat2's RESOLVE_BENEATH refuses absolute paths. */
static const char *relative(const char *path)
{
	path += strspn(path, "/");
	return *path != '\0' ? path : ".";
}

int inroot_open(int rootfd, const char *path, int flags, mode_t mode, enum inroot_policy pol,
		struct err *e)
{
	struct walk w = { .pol = pol, .follow_last = (flags & O_NOFOLLOW) == 0 };
	char leaf[NAME_MAX + 1];
	int fd = try_openat2(rootfd, relative(path), flags, mode, pol);

	/* openat2 answered, or failed: the walk gives the same answer and says why. */
	if (fd >= 0)
		return fd;
	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) < 0) {
		int saved = errno;

		walk_free(&w);
		errno = saved;
		return -1;
	}
	if (leaf[0] == '\0')
		fd = openat(w.fds[w.depth], ".", (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
	else
		fd = openat(w.fds[w.depth], leaf, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		fail_sys(e, "", w.shown, leaf);
	{
		int saved = errno;

		walk_free(&w);
		errno = saved;
	}
	return fd;
}

static int parent_walk(int rootfd, const char *path, enum inroot_policy pol, bool create,
		       mode_t mode, char *leaf, size_t leaf_size, struct err *e)
{
	struct walk w = { .pol = pol, .create = create, .mode = mode };
	int fd = -1, saved;

	if (walk(&w, rootfd, path, leaf, leaf_size, e) == 0) {
		if (leaf[0] == '\0')
			fail(e, EINVAL, "%s: the path has no file name", path);
		else if ((fd = dup(w.fds[w.depth])) < 0)
			fail_sys(e, "", w.shown, leaf);
	}
	saved = errno;
	walk_free(&w);
	errno = saved;
	return fd;
}

int inroot_parent(int rootfd, const char *path, enum inroot_policy pol, bool create, char *leaf,
		  size_t leaf_size, struct err *e)
{
	const char *rel = relative(path), *slash = strrchr(rel, '/');
	const char *name = slash != NULL ? slash + 1 : rel;
	size_t dlen = slash != NULL ? (size_t)(slash - rel) : 0;
	char dir[PATH_MAX];
	int fd;

	/* openat2 opens the directory when the split is plain text: a last
	 * name that is a real name, nothing to create. */
	if (!create && dlen < sizeof(dir) && strlen(name) < leaf_size && *name != '\0' &&
	    strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
		memcpy(dir, rel, dlen);
		dir[dlen] = '\0';
		fd = try_openat2(rootfd, dlen > 0 ? dir : ".", O_PATH | O_DIRECTORY, 0, pol);
		if (fd >= 0) {
			snprintf(leaf, leaf_size, "%s", name);
			return fd;
		}
	}
	return parent_walk(rootfd, rel, pol, create, 0755, leaf, leaf_size, e);
}

int inroot_mkdirs(int rootfd, const char *path, mode_t mode, enum inroot_policy pol,
		  struct err *e)
{
	struct walk w = { .pol = pol, .follow_last = true, .create = true, .mode = mode };
	char leaf[NAME_MAX + 1];
	int fd = -1, saved;

	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) == 0) {
		if (leaf[0] == '\0')
			fd = openat(w.fds[w.depth], ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		else if (mkdirat(w.fds[w.depth], leaf, mode) < 0 && errno != EEXIST)
			fail_sys(e, "cannot create", w.shown, leaf);
		else
			fd = openat(w.fds[w.depth], leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && e != NULL && e->code == 0)
			fail_sys(e, "", w.shown, leaf);
	}
	saved = errno;
	walk_free(&w);
	errno = saved;
	return fd;
}

int inroot_resolve(int rootfd, const char *path, enum inroot_policy pol, bool follow_last,
		   char *out, size_t size, struct err *e)
{
	struct walk w = { .pol = pol, .follow_last = follow_last, .missing_ok = true };
	char leaf[NAME_MAX + 1];
	int rv = -1, saved, n;

	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) == 0) {
		/* shown is "" or "/a/b": the relative form drops its slash. */
		if (w.shown[0] == '\0')
			n = snprintf(out, size, "%s", leaf[0] != '\0' ? leaf : ".");
		else
			n = snprintf(out, size, "%s%s%s", w.shown + 1, leaf[0] != '\0' ? "/" : "", leaf);
		rv = n >= 0 && (size_t)n < size ? 0 : fail(e, ENAMETOOLONG, "%s/%s: path too long",
							   w.shown, leaf);
	}
	saved = errno;
	walk_free(&w);
	errno = saved;
	return rv;
}
