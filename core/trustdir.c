/* trustdir.c - a directory no other user can redirect, reached from "/"
 * by descriptor (see trustdir.h). */
#include "trustdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define TRUSTDIR_MAX_LINKS 40

struct walk {
	uid_t me;
	int fd;                /* the directory reached so far (O_PATH) */
	char shown[PATH_MAX];  /* its path, for messages ("" is "/") */
	char todo[PATH_MAX];   /* what is left to walk */
	int links;
};

static const char *shown(const struct walk *w)
{
	return w->shown[0] != '\0' ? w->shown : "/";
}

static bool owner_ok(const struct walk *w, const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == w->me;
}

static int refuse(const char *what, const struct stat *st, const char *why, struct err *e)
{
	return err_set(e, EXIT_CTRUN, "%s is %s of uid %u (mode %04o), %s: another user could "
		       "redirect what ctrun writes there (use a directory of yours that only "
		       "you can write, or make one in a sticky directory such as /tmp)",
		       what, S_ISLNK(st->st_mode) ? "a symlink" : "a directory", (unsigned)st->st_uid,
		       (unsigned)(st->st_mode & 07777), why);
}

/* A directory on the way: root's or ours, and written by no one else
 * unless sticky. */
static int dir_ok(const struct walk *w, const struct stat *st, struct err *e)
{
	const char *me = w->me == 0 ? "not root's" : "neither yours nor root's";

	if (!owner_ok(w, st))
		return refuse(shown(w), st, me, e);
	if ((st->st_mode & 022) != 0 && (st->st_mode & S_ISVTX) == 0)
		return refuse(shown(w), st, "writable by others without the sticky bit", e);
	return 0;
}

/* Moves the walk to descriptor fd (a directory named `name` below the
 * current one, or its parent for ".."), checking it. */
static int enter(struct walk *w, int fd, const char *name, struct err *e)
{
	struct stat st;
	size_t len = strlen(w->shown);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s/%s", w->shown, name);
	if (strcmp(name, ".") == 0) {
		/* "/" itself: nothing to add */
	} else if (strcmp(name, "..") == 0) {
		char *slash = strrchr(w->shown, '/');

		if (slash != NULL)
			*slash = '\0';
	} else if (len + 1 + strlen(name) >= sizeof(w->shown)) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "%s/%s: path too long", w->shown, name);
	} else {
		snprintf(w->shown + len, sizeof(w->shown) - len, "/%s", name);
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	if (fstat(fd, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", shown(w));
	if (!S_ISDIR(st.st_mode))
		return err_set(e, EXIT_CTRUN, "%s is not a directory", shown(w));
	return dir_ok(w, &st, e);
}

/* A symlink of root's or ours: its target replaces it in what is left. */
static int follow(struct walk *w, const char *name, const char *rest, const struct stat *st,
		  struct err *e)
{
	char target[PATH_MAX], todo[PATH_MAX];
	ssize_t n;

	if (!owner_ok(w, st)) {
		char what[PATH_MAX + NAME_MAX + 2];

		snprintf(what, sizeof(what), "%s/%s", w->shown, name);
		return refuse(what, st, w->me == 0 ? "not root's" : "neither yours nor root's", e);
	}
	if (++w->links > TRUSTDIR_MAX_LINKS)
		return err_set(e, EXIT_CTRUN, "%s/%s: too many levels of symbolic links", w->shown,
			       name);
	n = readlinkat(w->fd, name, target, sizeof(target));
	if (n < 0 || (size_t)n >= sizeof(target)) {
		if (n >= 0)
			errno = ENAMETOOLONG;
		return err_sys(e, EXIT_CTRUN, "%s/%s", w->shown, name);
	}
	target[n] = '\0';
	if (xsnprintf(todo, sizeof(todo), "%s/%s", target, rest) < 0)
		return err_set(e, EXIT_CTRUN, "%s/%s: path too long", w->shown, name);
	memcpy(w->todo, todo, sizeof(todo));
	if (target[0] == '/') {
		w->shown[0] = '\0';
		return enter(w, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), ".", e) < 0 ? -1 : 0;
	}
	return 0;
}

/* One component below the current directory: made when missing. */
static int step(struct walk *w, const char *name, const char *rest, mode_t mode, struct err *e)
{
	struct stat st;

	for (int tries = 0;; tries++) {
		if (fstatat(w->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			break;
		if (errno != ENOENT || tries == 3)
			return err_sys(e, EXIT_CTRUN, "%s/%s", w->shown, name);
		if (mkdirat(w->fd, name, mode) < 0 && errno != EEXIST)
			return err_sys(e, EXIT_CTRUN, "cannot create %s/%s", w->shown, name);
	}
	if (S_ISLNK(st.st_mode))
		return follow(w, name, rest, &st, e);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, EXIT_CTRUN, "%s/%s is not a directory", w->shown, name);
	return enter(w, openat(w->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), name, e);
}

int trustdir_open(const char *path, mode_t mode, struct err *e)
{
	struct walk w;
	struct stat st;
	char name[NAME_MAX + 1], cwd[PATH_MAX];

	memset(&w, 0, sizeof(w));
	w.me = geteuid();
	w.fd = -1;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) == NULL)
		return err_sys(e, EXIT_CTRUN, "%s: the working directory", path);
	if (xsnprintf(w.todo, sizeof(w.todo), "%s/%s", path[0] == '/' ? "" : cwd, path) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", path);
	if (enter(&w, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), ".", e) < 0)
		goto fail;
	for (;;) {
		char *p = w.todo + strspn(w.todo, "/");
		size_t len = strcspn(p, "/");

		if (len == 0)
			break;
		if (len > NAME_MAX) {
			err_set(e, EXIT_CTRUN, "%s: a name in it is too long", path);
			goto fail;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		memmove(w.todo, p + len, strlen(p + len) + 1);
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0 ? enter(&w, openat(w.fd, "..", O_PATH | O_DIRECTORY |
							       O_CLOEXEC), "..", e) < 0
					    : step(&w, name, w.todo, mode, e) < 0)
			goto fail;
	}
	/* The directory files are made in: the caller's alone. */
	if (fstat(w.fd, &st) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", shown(&w));
		goto fail;
	}
	if (st.st_uid != w.me || (st.st_mode & 022) != 0) {
		refuse(shown(&w), &st, st.st_uid != w.me ? "not yours"
			   : "writable by others", e);
		goto fail;
	}
	return w.fd;
fail:
	if (w.fd >= 0)
		close(w.fd);
	return -1;
}
