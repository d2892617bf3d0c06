/* Unit tests: resolving a worker's command like execvp, so 127/126 are
 * known before any worker starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ctrun-test-cmd.XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int remove_dir(void **state)
{
	char path[PATH_MAX];

	(void)state;
	snprintf(path, sizeof(path), "%s/tool", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sh", dir);
	unlink(path);
	return rmdir(dir);
}

/* An empty file, mode 0644: found, but not executable. */
static void touch(const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

static void test_resolve_finds_command_in_path(void **state)
{
	char out[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(command_resolve("sh", "/nonexistent:/bin", out, sizeof(out), &e), 0);
	assert_string_equal(out, "/bin/sh");
}

static void test_resolve_missing_command_is_127(void **state)
{
	char out[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(command_resolve("ctrun-no-such-cmd", "/bin:/usr/bin", out, sizeof(out),
					 &e), -1);
	assert_int_equal(e.code, 127);
	assert_string_equal(e.msg, "command not found: ctrun-no-such-cmd");
	assert_int_equal(command_resolve("/nonexistent/x", NULL, out, sizeof(out), &e), -1);
	assert_int_equal(e.code, 127);
}

static void test_resolve_directory_or_non_executable_is_126(void **state)
{
	char out[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	touch("tool");
	assert_int_equal(command_resolve("tool", dir, out, sizeof(out), &e), -1);
	assert_int_equal(e.code, 126);
	assert_int_equal(command_resolve(dir, NULL, out, sizeof(out), &e), -1);
	assert_int_equal(e.code, 126);
	assert_non_null(strstr(e.msg, "is a directory"));
}

/* Like execvp: a later executable match beats an earlier unusable one. */
static void test_resolve_skips_non_executable_match(void **state)
{
	char path[PATH_MAX], out[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	touch("sh");
	snprintf(path, sizeof(path), "%s:/bin", dir);
	assert_int_equal(command_resolve("sh", path, out, sizeof(out), &e), 0);
	assert_string_equal(out, "/bin/sh");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_finds_command_in_path),
		cmocka_unit_test(test_resolve_missing_command_is_127),
		cmocka_unit_test_setup_teardown(test_resolve_directory_or_non_executable_is_126,
						make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_resolve_skips_non_executable_match, make_dir,
						remove_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
