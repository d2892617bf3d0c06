/* rootpath.c - chroot-style resolution and link-safe removal (see rootpath.h). */
#include "rootpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40

/* One walk for both normal forms: components joined by '/', "." and empty
 * ones dropped; ".." pops the previous component (stopping at the root) or
 * is refused.  `lead` is written first ("/" for absolute paths). */
static int clean_components(const char *p, bool pop_dotdot, const char *lead, char *out,
			    size_t size)
{
	size_t base = strlen(lead), o = base;

	if (size < base + 2) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(out, lead, base);
	while (*p != '\0') {
		const char *end;
		size_t len;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (len == 1 && p[0] == '.') {
			p = end;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (!pop_dotdot) {
				errno = EINVAL;
				return -1;
			}
			while (o > base && out[o - 1] != '/')
				o--;
			if (o > base)
				o--; /* the slash before the popped component */
			p = end;
			continue;
		}
		if (o + (o > base) + len + 1 > size) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (o > base)
			out[o++] = '/';
		memcpy(out + o, p, len);
		o += len;
		p = end;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return 0;
}

int rootpath_clean(const char *name, char *out, size_t size)
{
	return clean_components(name, false, "", out, size);
}

int rootpath_normalize(const char *path, char *out, size_t size)
{
	if (path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	return clean_components(path, true, "/", out, size);
}

/* Drops the last component of the resolved prefix `out` (len *o); stops at the root. */
static void pop(char *out, size_t *o)
{
	char *slash;

	out[*o] = '\0';
	slash = strrchr(out, '/');
	*o = slash != NULL ? (size_t)(slash - out) : 0;
	out[*o] = '\0';
}

int rootpath_resolve(int rootfd, const char *rel, bool follow_last, char *out, size_t size)
{
	/* `todo` holds what is left to walk; a symlink's target is put in front of it. */
	char *todo = NULL, *tmp = NULL;
	size_t o = 0, cap = PATH_MAX * 2;
	int links = 0, rv = -1;
	char *p;

	if (size < 2) {
		errno = ENAMETOOLONG;
		return -1;
	}
	todo = malloc(cap);
	tmp = malloc(cap);
	if (todo == NULL || tmp == NULL)
		goto out;
	if (strlen(rel) >= cap) {
		errno = ENAMETOOLONG;
		goto out;
	}
	strcpy(todo, rel);
	out[0] = '\0';
	p = todo;
	for (;;) {
		char comp[NAME_MAX + 1], link[PATH_MAX];
		const char *end;
		size_t len;
		struct stat st;
		ssize_t n;
		bool last;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (len > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto out;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		last = strspn(p, "/") == strlen(p);
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			pop(out, &o);
			continue;
		}
		if (o + (o > 0) + len + 1 > size) {
			errno = ENAMETOOLONG;
			goto out;
		}
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, comp, len + 1);
		o += len;
		if (last && !follow_last)
			continue;
		if (fstatat(rootfd, out, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue; /* not there yet: the rest is literal */
			goto out;
		}
		if (!S_ISLNK(st.st_mode))
			continue;
		if (++links > MAX_LINKS) {
			errno = ELOOP;
			goto out;
		}
		n = readlinkat(rootfd, out, link, sizeof(link) - 1);
		if (n < 0)
			goto out;
		link[n] = '\0';
		pop(out, &o); /* the link's own name is replaced by its target */
		if (link[0] == '/') {
			o = 0;
			out[0] = '\0';
		}
		if ((size_t)n + 1 + strlen(p) + 1 > cap) {
			errno = ENAMETOOLONG;
			goto out;
		}
		snprintf(tmp, cap, "%s/%s", link, p);
		strcpy(todo, tmp);
		p = todo;
	}
	if (o == 0)
		strcpy(out, ".");
	rv = 0;
out:
	free(todo);
	free(tmp);
	return rv;
}

static int remove_at(int dirfd, const char *name);

/* Empties directory fd (consumed) of everything keep() does not want. */
static int clear_fd(int fd, const char *prefix, bool (*keep)(const char *, void *), void *arg)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rv = 0;

	if (d == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (keep != NULL) {
			int r = strcmp(prefix, ".") == 0
				? snprintf(path, sizeof(path), "%s", de->d_name)
				: snprintf(path, sizeof(path), "%s/%s", prefix, de->d_name);

			if (r < 0 || (size_t)r >= sizeof(path) || keep(path, arg))
				continue;
		}
		if (remove_at(dirfd(d), de->d_name) < 0)
			rv = -1;
	}
	closedir(d);
	return rv;
}

static int remove_at(int dirfd, const char *name)
{
	int fd;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	/* O_NOFOLLOW|O_DIRECTORY: a symlink was unlinked above, never descended into. */
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* A directory we may not read (mode 0): make it ours to empty. */
		if (errno == EACCES && fchmodat(dirfd, name, 0700, 0) == 0)
			fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -1;
	}
	fchmod(fd, 0700); /* an unwritable directory cannot be emptied */
	if (clear_fd(fd, "", NULL, NULL) < 0)
		return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int rootpath_remove(int rootfd, const char *rel)
{
	if (strcmp(rel, ".") == 0) {
		errno = EINVAL;
		return -1;
	}
	return remove_at(rootfd, rel);
}

int rootpath_clear_dir(int rootfd, const char *rel, bool (*keep)(const char *path, void *arg),
		       void *arg)
{
	int fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	return clear_fd(fd, rel, keep, arg);
}

int remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path);
}
