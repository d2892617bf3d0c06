/* Unit tests: the trusted walk to a log directory (trustdir.h).  Each test
 * builds a small tree under a fresh 0700 directory of root's in /tmp and
 * plays the other user as uid 65534 (chown), so they need root, as
 * test_privdir.c does; the unprivileged caller runs in a child that drops
 * to 65534 itself. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "trustdir.h"

#define OTHER 65534

static char base[64];

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(base, sizeof(base), "/tmp/ctrun-test-trustdir.XXXXXX");
	assert_non_null(mkdtemp(base));
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	if (base[0] == '\0')
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	base[0] = '\0';
	return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *rel)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", base, rel);
	return b;
}

/* A directory at base/rel with this owner and mode (chmod after chown:
 * chown clears nothing we set, but keep the order explicit). */
static void dir(const char *rel, uid_t owner, mode_t mode)
{
	assert_int_equal(mkdir(at(rel), 0700), 0);
	assert_int_equal(chown(at(rel), owner, owner), 0);
	assert_int_equal(chmod(at(rel), mode), 0);
}

/* trustdir_open's verdict: 0, or -1 with the message in e. */
static int walk(const char *path, struct err *e)
{
	int fd = trustdir_open(path, 0755, e);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static void test_missing_steps_are_made_and_accepted_again(void **state)
{
	struct err e = { 0 };
	struct stat st;

	(void)state;
	assert_int_equal(walk(at("logs/77/node1"), &e), 0);
	assert_int_equal(stat(at("logs/77/node1"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 022, 0);
	assert_int_equal(walk(at("logs/77/node1"), &e), 0);
	/* Relative to the working directory, "." and ".." on the way. */
	assert_int_equal(chdir(base), 0);
	assert_int_equal(walk("./logs/../logs/78//node1", &e), 0);
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(access(at("logs/78/node1"), F_OK), 0);
}

/* A sticky place everyone writes (/tmp): a directory of ours in it is
 * fine; one another user made first, or their symlink, is refused. */
static void test_sticky_place_takes_only_our_own_directory(void **state)
{
	struct err e = { 0 };

	(void)state;
	dir("tmp", 0, 01777);
	assert_int_equal(walk(at("tmp/mine/77/n1"), &e), 0);
	dir("tmp/theirs", OTHER, 0777);
	assert_int_equal(walk(at("tmp/theirs/77/n1"), &e), -1);
	assert_non_null(strstr(e.msg, "tmp/theirs is a directory of uid 65534"));
	assert_non_null(strstr(e.msg, "not root's"));
	assert_int_not_equal(access(at("tmp/theirs/77"), F_OK), 0);
	assert_int_equal(symlink(at("tmp/mine"), at("tmp/link")), 0);
	assert_int_equal(lchown(at("tmp/link"), OTHER, OTHER), 0);
	assert_int_equal(walk(at("tmp/link/77/n1"), &e), -1);
	assert_non_null(strstr(e.msg, "tmp/link is a symlink of uid 65534"));
	/* Our own link is followed, relative or absolute. */
	assert_int_equal(symlink("mine", at("tmp/ours")), 0);
	assert_int_equal(walk(at("tmp/ours/77/n1"), &e), 0);
	assert_int_equal(symlink(at("tmp/mine"), at("tmp/ours-abs")), 0);
	assert_int_equal(walk(at("tmp/ours-abs/78/n1"), &e), 0);
	assert_int_equal(access(at("tmp/mine/78/n1"), F_OK), 0);
}

/* A directory others can write without the sticky bit (a 0777 share, a
 * group-writable project directory): anyone there can rename our
 * directory away and put theirs in its place, so nothing below it counts. */
static void test_writable_by_others_without_sticky_bit_is_refused(void **state)
{
	struct err e = { 0 };

	(void)state;
	dir("open", 0, 0777);
	assert_int_equal(walk(at("open/logs"), &e), -1);
	assert_non_null(strstr(e.msg, "writable by others without the sticky bit"));
	dir("group", 0, 0775);
	assert_int_equal(walk(at("group/logs"), &e), -1);
	assert_non_null(strstr(e.msg, "group is a directory of uid 0 (mode 0775)"));
	/* The last directory is where files are made: ours alone, sticky or not. */
	dir("last", 0, 01777);
	assert_int_equal(walk(at("last"), &e), -1);
	assert_non_null(strstr(e.msg, "writable by others"));
}

static void test_file_or_link_loop_on_the_way_is_refused(void **state)
{
	struct err e = { 0 };
	FILE *f = fopen(at("file"), "w");

	(void)state;
	assert_non_null(f);
	fclose(f);
	assert_int_equal(walk(at("file/logs"), &e), -1);
	assert_non_null(strstr(e.msg, "file is not a directory"));
	assert_int_equal(symlink("loop", at("loop")), 0);
	assert_int_equal(walk(at("loop/logs"), &e), -1);
	assert_non_null(strstr(e.msg, "too many levels of symbolic links"));
}

/* An unprivileged caller: root's directories count, its own too; a
 * root-owned place it cannot write is an error from mkdir, not a pass. */
static void test_user_trusts_roots_directories_and_its_own(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	assert_int_equal(chmod(base, 0755), 0);
	dir("tmp", 0, 01777);
	dir("ro", 0, 0755);
	dir("tmp/theirs", 1, 0755); /* uid 1: yet another user */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct err e = { 0 };

		if (setgid(OTHER) < 0 || setuid(OTHER) < 0)
			_exit(10);
		if (walk(at("tmp/mine/77/n1"), &e) != 0)
			_exit(11);
		if (walk(at("ro/logs"), &e) == 0 || strstr(e.msg, "Permission denied") == NULL)
			_exit(12);
		if (walk(at("tmp/theirs/x"), &e) == 0 ||
		    strstr(e.msg, "neither yours nor root's") == NULL)
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_steps_are_made_and_accepted_again, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sticky_place_takes_only_our_own_directory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_writable_by_others_without_sticky_bit_is_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_or_link_loop_on_the_way_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_user_trusts_roots_directories_and_its_own, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
