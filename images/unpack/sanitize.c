/* sanitize.c - what an unpacked image may not keep (see unpack.h).
 *
 * Unpacking as root keeps what the image says: device nodes (a raw disk a
 * user could open through a shared cache), setuid and setgid programs
 * (root for whoever runs them from the host), file capabilities (xattrs,
 * which the unpackers no longer extract), files and directories others may
 * write (a shared cache's entry is every user's).  FIFOs and sockets go
 * too: nothing needs one at rest, and a FIFO makes its reader (ldconfig,
 * the hook) hang.  The container runtime provides /dev, and an
 * unprivileged user's unpack could not make most of these, so an image
 * never needed them: every unpack ends with this walk, as root or not, so
 * the tree is the same for both. */
#include "unpack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256 /* directories deep; every level holds one descriptor */

/* What a walk does besides removing special files: give every inode to
 * root (a shared entry), or only check, changing nothing. */
enum {
	TO_ROOT = 1,
	CHECK_ONLY = 2,
};

/* In CHECK_ONLY mode: why this inode may not stay in a shared entry, or NULL. */
static const char *unfit(const struct stat *st)
{
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISFIFO(st->st_mode) ||
	    S_ISSOCK(st->st_mode))
		return "a special file";
	if (st->st_uid != 0 || st->st_gid != 0)
		return "not owned by root";
	if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) != 0)
		return "setuid or setgid";
	if (!S_ISLNK(st->st_mode) && (st->st_mode & 022) != 0)
		return "writable by group or others";
	return NULL;
}

/* One inode of the walk: checked (CHECK_ONLY), or removed / given to root
 * (TO_ROOT) / stripped of setuid, setgid and write bits for others. */
static int fix(int dfd, const char *shown, const char *n, struct stat *st, unsigned how,
	       struct err *e)
{
	const char *why;

	if ((how & CHECK_ONLY) != 0) {
		why = unfit(st);
		return why == NULL ? 0 : err_set(e, EXIT_CTRUN, "%s/%s is %s (uid %u, mode %04o)",
						 shown, n, why, (unsigned)st->st_uid,
						 (unsigned)(st->st_mode & 07777));
	}
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISFIFO(st->st_mode) ||
	    S_ISSOCK(st->st_mode)) {
		/* A FIFO at rest only makes a reader (ldconfig, the hook) hang. */
		if (unlinkat(dfd, n, 0) < 0)
			return err_sys(e, EXIT_CTRUN, "removing special file %s/%s", shown, n);
		return 0;
	}
	/* AT_SYMLINK_NOFOLLOW: nothing can be swapped in to chown or chmod
	 * elsewhere.  The owner first: chown clears setuid bits anyway. */
	if ((how & TO_ROOT) != 0 && (st->st_uid != 0 || st->st_gid != 0) &&
	    fchownat(dfd, n, 0, 0, AT_SYMLINK_NOFOLLOW) < 0)
		return err_sys(e, EXIT_CTRUN, "giving %s/%s to root", shown, n);
	if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID | 022)) != 0 &&
	    fchmodat(dfd, n, st->st_mode & 01755, AT_SYMLINK_NOFOLLOW) < 0)
		return err_sys(e, EXIT_CTRUN, "clearing setuid/setgid/write bits of %s/%s", shown,
			       n);
	return 0;
}

static int walk(int dfd, const char *shown, int depth, unsigned how, struct err *e)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int rv = 0;

	if (d == NULL) {
		close(dfd);
		return err_sys(e, EXIT_CTRUN, "sanitizing %s", shown);
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		struct stat st;

		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rv = err_sys(e, EXIT_CTRUN, "sanitizing %s/%s", shown, n);
		else if (S_ISDIR(st.st_mode) && depth >= MAX_DEPTH)
			rv = err_set(e, EXIT_CTRUN, "directories nested deeper than %d (at %s/%s)",
				     MAX_DEPTH, shown, n);
		else
			rv = fix(dirfd(d), shown, n, &st, how, e);
		if (rv == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			rv = sub < 0 ? err_sys(e, EXIT_CTRUN, "sanitizing %s/%s", shown, n)
				     : walk(sub, n, depth + 1, how, e); /* walk owns sub */
		}
	}
	closedir(d);
	return rv;
}

static int walk_root(const char *root, unsigned how, struct err *e)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "sanitizing %s", root);
	if ((how & (TO_ROOT | CHECK_ONLY)) != 0 && fstat(fd, &st) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "sanitizing %s", root);
	}
	if ((how & CHECK_ONLY) != 0 && unfit(&st) != NULL) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "%s is %s (uid %u, mode %04o)", root, unfit(&st),
			       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	}
	if ((how & TO_ROOT) != 0 && (fchown(fd, 0, 0) < 0 || fchmod(fd, st.st_mode & 0755) < 0)) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "giving %s to root", root);
	}
	return walk(fd, root, 0, how, e);
}

int image_sanitize(const char *root, struct err *e)
{
	return walk_root(root, 0, e);
}

int image_sanitize_shared(const char *root, struct err *e)
{
	return walk_root(root, TO_ROOT, e);
}

int image_check_shared(const char *root, struct err *e)
{
	return walk_root(root, CHECK_ONLY, e);
}
