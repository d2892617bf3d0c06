/* logfiles.c - the per-rank log files (see logfiles.h).
 *
 * The log directory was made and checked from "/" by whoever gave it
 * (launch.c, the container set-up on the host: core/trustdir.h); here,
 * possibly inside a container where the host's owners do not show, it is
 * opened once more and must still be ours and written by no one else, and
 * each file is opened in it without following a link or blocking on
 * something that is not a regular file. */
#include "logfiles.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int logdir_open(const char *dir, struct err *e)
{
	struct stat st;
	uid_t me = geteuid();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return err_sys(e, EXIT_CTRUN, "log directory %s", dir);
	if (fstat(dfd, &st) < 0) {
		err_sys(e, EXIT_CTRUN, "log directory %s", dir);
		close(dfd);
		return -1;
	}
	if (st.st_uid != me || (st.st_mode & 022) != 0) {
		err_set(e, EXIT_CTRUN, "log directory %s is not yours alone (uid %u, mode %04o; you "
			"are uid %u): no log file written there", dir, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777), (unsigned)me);
		close(dfd);
		return -1;
	}
	return dfd;
}

int logfile_open(int dfd, const char *dir, long rank, struct err *e)
{
	char name[64];
	struct stat st;
	int fd;

	if (xsnprintf(name, sizeof(name), "rank-%ld.log", rank) < 0)
		return err_sys(e, EXIT_CTRUN, "log file in %s", dir);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "log file %s/%s", dir, name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "log file %s/%s is not a regular file of yours", dir,
			       name);
	}
	return fd;
}
