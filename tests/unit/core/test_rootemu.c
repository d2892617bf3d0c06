/* Unit tests: root emulation (rootemu.h).  Each case runs in a child, in a
 * user namespace of its own where it has to (the filter stays with the
 * process that installed it); the child reports the first check that
 * failed by its exit status and a line on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rootemu.h"

#define NOWHERE "/nonexistent/ctrun-test-rootemu"

static int failed;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond) && failed == 0) {                                          \
			fprintf(stderr, "child: line %d: %s (errno %s)\n", __LINE__, #cond, \
				strerror(errno));                                      \
			failed = __LINE__;                                             \
		}                                                                      \
	} while (0)

/* The line of /proc/self/status that starts with key, or "". */
static void status_line(const char *key, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	out[0] = '\0';
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0) {
			snprintf(out, size, "%s", line);
			break;
		}
	if (f != NULL)
		fclose(f);
}

/* Runs fn in a child; its exit status (0: every check held). */
static int in_child(void (*fn)(void))
{
	int ws;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		failed = 0;
		fn();
		fflush(stderr);
		_exit(failed != 0 ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static void faked_calls(void)
{
	struct err e = { 0 };
	char line[256];
	uid_t uid;
	gid_t gid;

	CHECK(unshare(CLONE_NEWUSER) == 0);
	uid = getuid(); /* the overflow id: nothing is mapped */
	gid = getgid();
	/* Without the filter: the calls fail as the kernel says. */
	CHECK(chown(NOWHERE, 0, 0) < 0 && errno == ENOENT);
	CHECK(setuid(0) < 0 && errno == EINVAL);
	CHECK(rootemu_in_userns());
	CHECK(rootemu_install(&e) == 0);
	status_line("Seccomp:", line, sizeof(line));
	CHECK(strcmp(line, "Seccomp:\t2\n") == 0);
	/* The filter answers before the kernel looks at the path or fd... */
	CHECK(chown(NOWHERE, 0, 0) == 0);
	CHECK(lchown(NOWHERE, 0, 0) == 0);
	CHECK(fchown(-1, 0, 0) == 0);
	CHECK(fchownat(AT_FDCWD, NOWHERE, 0, 0, AT_SYMLINK_NOFOLLOW) == 0);
	CHECK(setuid(0) == 0 && setgid(0) == 0);
	CHECK(setreuid(0, 0) == 0 && setregid(0, 0) == 0);
	CHECK(setresuid(0, 0, 0) == 0 && setresgid(0, 0, 0) == 0);
	CHECK(setgroups(0, NULL) == 0);
	/* ...and grants nothing: the ids are those of before. */
	CHECK(getuid() == uid && geteuid() == uid && getgid() == gid && getegid() == gid);
	/* setfsuid(-1) is a query, answered as usual (the current id); any
	 * other id is faked (the "previous id" reads 0). */
	CHECK(setfsuid((uid_t)-1) == (int)uid);
	CHECK(setfsgid((gid_t)-1) == (int)gid);
	CHECK(setfsuid(0) == 0 && setfsgid(0) == 0);
	CHECK(setfsuid((uid_t)-1) == (int)uid);
	/* Every other call runs as usual. */
	CHECK(open(NOWHERE, O_RDONLY) < 0 && errno == ENOENT);
	CHECK(getpid() > 1);
	/* No speculation mitigation forced by the filter (the flag). */
	status_line("Speculation_Store_Bypass:", line, sizeof(line));
	CHECK(strstr(line, "force mitigated") == NULL);
}

static void test_calls_are_faked_and_nothing_granted(void **state)
{
	(void)state;
	assert_int_equal(in_child(faked_calls), 0);
}

static void inherited(void)
{
	struct err e = { 0 };
	int ws;
	pid_t pid;

	CHECK(unshare(CLONE_NEWUSER) == 0);
	CHECK(rootemu_install(&e) == 0);
	/* A child, and a program it execs, keep the filter. */
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "grep -q '^Seccomp:.2$' /proc/self/status", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static void test_children_and_exec_keep_it(void **state)
{
	(void)state;
	assert_int_equal(in_child(inherited), 0);
}

static void no_capability(void)
{
	struct err e = { 0 };
	char line[256];

	/* An unprivileged process outside any namespace of its own. */
	CHECK(setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
	      setresuid(65534, 65534, 65534) == 0);
	CHECK(rootemu_install(&e) < 0 && errno == EACCES);
	CHECK(strstr(e.msg, "root emulation") != NULL);
	status_line("Seccomp:", line, sizeof(line));
	CHECK(strcmp(line, "Seccomp:\t0\n") == 0);
}

static void test_refused_without_the_capability(void **state)
{
	(void)state;
	if (geteuid() != 0)
		fail_msg("this test drops root's identity: run the unit tests as root");
	assert_int_equal(in_child(no_capability), 0);
}

/* in_userns's answer in a child whose uid_map the parent writes (map NULL:
 * none written). */
static int child_in_userns(const char *map)
{
	int ready[2], go[2], ws;
	char c = 0, path[64];
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		if (unshare(CLONE_NEWUSER) < 0 || write(ready[1], &c, 1) != 1)
			_exit(2);
		/* Goes on once the parent wrote the map (or did not). */
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(rootemu_in_userns() ? 1 : 0);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	if (map != NULL) {
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, map, strlen(map)), (ssize_t)strlen(map));
		close(fd);
	}
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	return WEXITSTATUS(ws);
}

static void test_in_userns_reads_the_map(void **state)
{
	(void)state;
	if (geteuid() != 0)
		fail_msg("writing another process's uid_map needs root: run the unit tests as root");
	assert_int_equal(child_in_userns("0 0 4294967295\n"), 0); /* the host's map */
	assert_int_equal(child_in_userns("0 1003 1\n"), 1);       /* rootless */
	assert_int_equal(child_in_userns("1003 1003 1\n"), 1);    /* the caller as itself */
	assert_int_equal(child_in_userns("0 0 1000\n"), 1);       /* part of the host's */
	assert_int_equal(child_in_userns(NULL), 1);               /* nothing mapped yet */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_are_faked_and_nothing_granted),
		cmocka_unit_test(test_children_and_exec_keep_it),
		cmocka_unit_test(test_refused_without_the_capability),
		cmocka_unit_test(test_in_userns_reads_the_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
