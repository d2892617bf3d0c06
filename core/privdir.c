/* privdir.c - a directory no one else can change (see privdir.h). */
#include "privdir.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int privdir_make(const char *path, unsigned flags, struct err *e)
{
	mode_t others = (flags & PRIVDIR_UNREADABLE) != 0 ? 0077 : 0022;
	struct stat st;
	uid_t me = geteuid();

	if ((flags & PRIVDIR_PARENTS) != 0 ? mkdir_p(path, 0700) < 0
					   : mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (lstat(path, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != me)
			return err_set(e, EXIT_CTRUN, "%s is a symlink that another user (uid %u) "
				       "owns: refusing it (remove it, or choose another directory)",
				       path, (unsigned)st.st_uid);
		if (stat(path, &st) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", path);
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & others) != 0)
		return err_set(e, EXIT_CTRUN, "%s must be a directory of yours (uid %u) that no "
			       "one else can %s (it is %s of uid %u, mode %04o)", path, (unsigned)me,
			       (flags & PRIVDIR_UNREADABLE) != 0 ? "read or write" : "write",
			       S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
			       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}
