/* rootpath.c - lexical path forms and link-safe removal (see rootpath.h). */
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
		/* AT_SYMLINK_NOFOLLOW: a link swapped in here is not followed to
		 * chmod its target (glibc does it through an O_PATH fd). */
		if (errno == EACCES && fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
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
