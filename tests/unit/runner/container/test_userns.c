/* Unit tests: the user namespaces of a rootless container
 * (runner/container/userns.c), on the running kernel, as an unprivileged
 * user (the test's own uid, or 54321 when the test runs as root): U2,
 * where the caller is root, lies in U1, a child of the caller's namespace
 * that maps the caller to themselves, and a process of that user outside
 * may join U1 and is there what pyxis's tasks are ("UID UID 1"). */
#include "ctrtest.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "userns.h"

static unsigned test_id(void)
{
	return geteuid() == 0 ? 54321u : (unsigned)geteuid();
}

/* The test's user, with its gid the same number, dumpable. */
static int become_user(void)
{
	unsigned id = test_id();

	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static bool same(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
	       sa.st_dev == sb.st_dev;
}

/* A file's words joined by one space. */
static void words(const char *path, char *out, size_t size)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	size_t o = 0;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (char *w = strtok(buf, " \n"); w != NULL && o + strlen(w) + 2 < size;
	     w = strtok(NULL, " \n"))
		o += (size_t)snprintf(out + o, size - o, "%s%s", o ? " " : "", w);
	out[o] = '\0';
}

static void test_the_runtimes_root_namespace_lies_in_one_mapping_the_user_to_themselves(void **s)
{
	char want[64], got[64];
	int ready[2], hold[2], ours, u2, u1, top;
	pid_t holder, joiner;
	int ws;
	char c;

	(void)s;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		struct err e = { 0 };

		close(ready[0]);
		close(hold[1]);
		if (become_user() < 0 || userns_enter(test_id(), test_id(), &e) < 0)
			_exit(1);
		words("/proc/self/uid_map", got, sizeof(got));
		if (write(ready[1], got, strlen(got) + 1) < 0)
			_exit(1);
		while (read(hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	memset(got, 0, sizeof(got));
	assert_true(read(ready[0], got, sizeof(got) - 1) > 0);
	/* Root of its own (the runtime runs there). */
	snprintf(want, sizeof(want), "0 %u 1", test_id());
	assert_string_equal(got, want);
	/* Its parent is not ours, but a child of ours owned by the user. */
	snprintf(got, sizeof(got), "/proc/%d/ns/user", (int)holder);
	ours = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	u2 = open(got, O_RDONLY | O_CLOEXEC);
	assert_true(ours >= 0 && u2 >= 0);
	u1 = ioctl(u2, NS_GET_PARENT);
	assert_true(u1 >= 0);
	assert_false(same(u1, ours));
	top = ioctl(u1, NS_GET_PARENT);
	assert_true(top >= 0);
	assert_true(same(top, ours));
	/* The user outside joins it and is themselves there, with their gid. */
	joiner = fork();
	assert_true(joiner >= 0);
	if (joiner == 0) {
		char gid[64];

		if (become_user() < 0 || setns(u1, CLONE_NEWUSER) < 0)
			_exit(1);
		words("/proc/self/uid_map", got, sizeof(got));
		words("/proc/self/gid_map", gid, sizeof(gid));
		snprintf(want, sizeof(want), "%u %u 1", test_id(), test_id());
		_exit(strcmp(got, want) != 0 ? 2 : strcmp(gid, want) != 0 ? 3 : 0);
	}
	assert_int_equal(waitpid(joiner, &ws, 0), joiner);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	close(hold[1]);
	close(ready[0]);
	assert_int_equal(waitpid(holder, &ws, 0), holder);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	close(top);
	close(u1);
	close(u2);
	close(ours);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_runtimes_root_namespace_lies_in_one_mapping_the_user_to_themselves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
