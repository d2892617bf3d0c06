/* asuser.c - the agent's switch to the caller's identity (see asuser.h). */
#include "asuser.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rootemu.h"
#include "util.h"

static int write_text(const char *path, const char *text, struct err *e)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
		int saved = errno;

		if (fd >= 0)
			close(fd);
		errno = saved;
		return err_sys(e, EXIT_CTRUN, "identity: writing %s", path);
	}
	if (close(fd) < 0)
		return err_sys(e, EXIT_CTRUN, "identity: writing %s", path);
	return 0;
}

int asuser_enter(uid_t uid, gid_t gid, struct err *e)
{
	char map[64];

	if (unshare(CLONE_NEWUSER) < 0)
		return err_sys(e, EXIT_CTRUN, "identity: cannot create a user namespace in the "
			       "container to run as uid %u (run with --root to stay root)",
			       (unsigned)uid);
	/* Our own ids only (we have no capability in the outer namespace):
	 * setgroups must be denied before the gid_map. */
	if (write_text("/proc/self/setgroups", "deny", e) < 0)
		return -1;
	if (xsnprintf(map, sizeof(map), "%u 0 1\n", (unsigned)uid) < 0 ||
	    write_text("/proc/self/uid_map", map, e) < 0)
		return -1;
	if (xsnprintf(map, sizeof(map), "%u 0 1\n", (unsigned)gid) < 0 ||
	    write_text("/proc/self/gid_map", map, e) < 0)
		return -1;
	/* The ids read UID and GID now; set them all the same (real, saved).
	 * The capabilities this namespace gave us end at the workers' exec
	 * (their uid is not 0). */
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return err_sys(e, EXIT_CTRUN, "identity: becoming uid %u gid %u", (unsigned)uid,
			       (unsigned)gid);
	return 0;
}

int asuser_exec(int argc, char **argv)
{
	struct err e = { 0 };
	long uid, gid;

	if (argc < 5 || parse_long(argv[2], 0, 4294967294L, &uid) < 0 ||
	    parse_long(argv[3], 0, 4294967294L, &gid) < 0) {
		fprintf(stderr, "usage: %s %s UID GID COMMAND [ARG...]   (started by ctrun)\n",
			argv[0], ASUSER_ARG);
		return EXIT_USAGE;
	}
	if (asuser_enter((uid_t)uid, (gid_t)gid, &e) < 0) {
		fprintf(stderr, "ctrun: %s\n", e.msg);
		return EXIT_CTRUN;
	}
	rootemu_apply(false);
	execvp(argv[4], argv + 4);
	fprintf(stderr, "ctrun: %s: %s\n", argv[4], strerror(errno));
	return errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}
