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

static int walk(int dfd, const char *shown, int depth, struct err *e)
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
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rv = err_sys(e, EXIT_CTRUN, "sanitizing %s/%s", shown, n);
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) ||
			   S_ISSOCK(st.st_mode)) {
			/* A FIFO at rest only makes a reader (ldconfig, the hook) hang. */
			if (unlinkat(dirfd(d), n, 0) < 0)
				rv = err_sys(e, EXIT_CTRUN, "removing special file %s/%s", shown, n);
		} else if (S_ISDIR(st.st_mode) && depth >= MAX_DEPTH) {
			rv = err_set(e, EXIT_CTRUN, "directories nested deeper than %d (at %s/%s)",
				     MAX_DEPTH, shown, n);
		} else if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID | 022)) != 0 &&
			   fchmodat(dirfd(d), n, st.st_mode & 01755, AT_SYMLINK_NOFOLLOW) < 0) {
			/* AT_SYMLINK_NOFOLLOW: nothing can be swapped in to chmod elsewhere. */
			rv = err_sys(e, EXIT_CTRUN, "clearing setuid/setgid/write bits of %s/%s",
				     shown, n);
		}
		if (rv == 0 && S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
			int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			rv = sub < 0 ? err_sys(e, EXIT_CTRUN, "sanitizing %s/%s", shown, n)
				     : walk(sub, n, depth + 1, e); /* walk owns sub */
		}
	}
	closedir(d);
	return rv;
}

int image_sanitize(const char *root, struct err *e)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "sanitizing %s", root);
	return walk(fd, root, 0, e);
}
