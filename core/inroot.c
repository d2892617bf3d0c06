/* inroot.c - paths resolved inside a root directory (see inroot.h).
 *
 * The walk (pathwalk.c, the one the tree in memory of a squashfs uses too)
 * runs here over a stack of O_PATH descriptors, one per directory from the
 * root down, each component opened with O_NOFOLLOW: a symlink is read
 * through its own descriptor and its target put in front of what is left to
 * walk, so nothing can be swapped in between a check and its use. */
#include "inroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pathwalk.h"

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

/* The walk's back end (pathwalk.h): a stack of O_PATH descriptors, fd[0]
 * the root, fd[depth] the current directory; `child` the one a lookup
 * holds. */
struct fds {
	int *fd;
	size_t depth, cap;
	int child;
};

struct walk {
	struct pathwalk pw;
	struct fds b;
};

static int fds_lookup(void *be, const char *name, mode_t *type)
{
	struct fds *b = be;
	struct stat st;
	int fd = openat(b->fd[b->depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC), saved;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	*type = st.st_mode & S_IFMT;
	b->child = fd;
	return 0;
}

static int fds_readlink(void *be, char *buf, size_t size)
{
	struct fds *b = be;
	ssize_t n = readlinkat(b->child, "", buf, size - 1);
	int saved = errno;

	close(b->child);
	b->child = -1;
	errno = saved;
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int fds_mkdir(void *be, const char *name, mode_t mode)
{
	struct fds *b = be;

	return mkdirat(b->fd[b->depth], name, mode);
}

static void fds_drop(void *be)
{
	struct fds *b = be;

	if (b->child >= 0)
		close(b->child);
	b->child = -1;
}

static int fds_enter(void *be)
{
	struct fds *b = be;

	if (b->depth + 1 >= b->cap) {
		size_t cap = b->cap * 2;
		int *fd = realloc(b->fd, cap * sizeof(*fd));

		if (fd == NULL) {
			fds_drop(b);
			errno = ENOMEM;
			return -1;
		}
		b->fd = fd;
		b->cap = cap;
	}
	b->fd[++b->depth] = b->child;
	b->child = -1;
	return 0;
}

static void fds_up(void *be)
{
	struct fds *b = be;

	close(b->fd[b->depth--]);
}

static void fds_to_root(void *be)
{
	struct fds *b = be;

	while (b->depth > 0)
		close(b->fd[b->depth--]);
}

static const struct pathwalk_ops fds_ops = {
	.lookup = fds_lookup,
	.readlink = fds_readlink,
	.mkdir = fds_mkdir,
	.enter = fds_enter,
	.drop = fds_drop,
	.up = fds_up,
	.to_root = fds_to_root,
};

static void walk_init(struct walk *w, enum inroot_policy pol)
{
	memset(w, 0, sizeof(*w));
	w->pw.ops = &fds_ops;
	w->pw.be = &w->b;
	w->pw.beneath = pol != INROOT_CHROOT;
	w->pw.no_links = pol == INROOT_NO_LINKS;
	w->b.child = -1;
}

static void walk_free(struct walk *w)
{
	for (size_t i = 0; w->b.fd != NULL && i <= w->b.depth; i++)
		close(w->b.fd[i]);
	free(w->b.fd);
	w->b.fd = NULL;
	fds_drop(&w->b);
}

/* The directory the walk ends in. */
static int cur(const struct walk *w)
{
	return w->b.fd[w->b.depth];
}

/* Walks `path` to its last component: cur(w) is the directory that holds
 * it, `leaf` its name ("" when the path ends at a directory).  With
 * follow_last a symlink there is followed first.  -1 with errno and e. */
static int walk(struct walk *w, int rootfd, const char *path, char *leaf, size_t leaf_size,
		struct err *e)
{
	w->b.cap = 16;
	w->b.depth = 0;
	w->b.fd = malloc(w->b.cap * sizeof(*w->b.fd));
	if (w->b.fd == NULL)
		return pathwalk_fail(e, ENOMEM, "out of memory");
	w->b.fd[0] = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->b.fd[0] < 0) {
		int saved = errno;

		free(w->b.fd);
		w->b.fd = NULL;
		errno = saved;
		return e != NULL ? err_sys(e, EXIT_CTRUN, "the image's root") : -1;
	}
	return pathwalk_run(&w->pw, path, leaf, leaf_size, e);
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
	struct walk w;
	char leaf[NAME_MAX + 1];
	int fd = try_openat2(rootfd, relative(path), flags, mode, pol);

	/* openat2 answered, or failed: the walk gives the same answer and says why. */
	if (fd >= 0)
		return fd;
	walk_init(&w, pol);
	w.pw.follow_last = (flags & O_NOFOLLOW) == 0;
	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) < 0) {
		int saved = errno;

		walk_free(&w);
		errno = saved;
		return -1;
	}
	if (leaf[0] == '\0')
		fd = openat(cur(&w), ".", (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
	else
		fd = openat(cur(&w), leaf, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		pathwalk_fail_sys(e, "", w.pw.shown, leaf);
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
	struct walk w;
	int fd = -1, saved;

	walk_init(&w, pol);
	w.pw.create = create;
	w.pw.mode = mode;
	if (walk(&w, rootfd, path, leaf, leaf_size, e) == 0) {
		if (leaf[0] == '\0')
			pathwalk_fail(e, EINVAL, "%s: the path has no file name", path);
		else if ((fd = dup(cur(&w))) < 0)
			pathwalk_fail_sys(e, "", w.pw.shown, leaf);
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
	struct walk w;
	char leaf[NAME_MAX + 1];
	int fd = -1, saved;

	walk_init(&w, pol);
	w.pw.follow_last = true;
	w.pw.create = true;
	w.pw.mode = mode;
	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) == 0) {
		if (leaf[0] == '\0')
			fd = openat(cur(&w), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		else if (mkdirat(cur(&w), leaf, mode) < 0 && errno != EEXIST)
			pathwalk_fail_sys(e, "cannot create", w.pw.shown, leaf);
		else
			fd = openat(cur(&w), leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && e != NULL && e->code == 0)
			pathwalk_fail_sys(e, "", w.pw.shown, leaf);
	}
	saved = errno;
	walk_free(&w);
	errno = saved;
	return fd;
}

int inroot_resolve(int rootfd, const char *path, enum inroot_policy pol, bool follow_last,
		   char *out, size_t size, struct err *e)
{
	struct walk w;
	char leaf[NAME_MAX + 1];
	int rv = -1, saved;

	walk_init(&w, pol);
	w.pw.follow_last = follow_last;
	w.pw.missing_ok = true;
	if (walk(&w, rootfd, relative(path), leaf, sizeof(leaf), e) == 0)
		rv = pathwalk_result(&w.pw, leaf, out, size, e);
	saved = errno;
	walk_free(&w);
	errno = saved;
	return rv;
}
