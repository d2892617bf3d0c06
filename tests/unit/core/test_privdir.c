/* Unit tests: the one private-directory check (privdir.h) refuses what
 * another user could have prepared at ctrun's path in a shared /tmp. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "privdir.h"

static char base[64], path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/ctrun-test-privdir.XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/dir", base);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_made_private_and_accepted_again(void **state)
{
	struct err e = { 0 };
	char deep[192];
	struct stat st;

	(void)state;
	assert_int_equal(privdir_make(path, PRIVDIR_UNREADABLE, &e), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(privdir_make(path, PRIVDIR_UNREADABLE, &e), 0);
	snprintf(deep, sizeof(deep), "%s/a/b", path);
	assert_int_equal(privdir_make(deep, 0, &e), -1); /* no parents without the flag */
	assert_int_equal(privdir_make(deep, PRIVDIR_PARENTS, &e), 0);
}

static void test_writable_or_readable_by_others_is_refused(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(privdir_make(path, 0, &e), 0); /* a cache may be read */
	assert_int_equal(privdir_make(path, PRIVDIR_UNREADABLE, &e), -1);
	assert_non_null(strstr(e.msg, "no one else can read or write"));
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(privdir_make(path, 0, &e), -1);
	assert_non_null(strstr(e.msg, "mode 0777"));
}

static void test_file_at_the_path_is_refused(void **state)
{
	struct err e = { 0 };
	FILE *f = fopen(path, "w");

	(void)state;
	assert_non_null(f);
	fclose(f);
	assert_int_equal(privdir_make(path, 0, &e), -1);
	assert_non_null(strstr(e.msg, "not a directory"));
}

/* Another user's directory, or their symlink to a directory of ours, at our
 * path: both refused.  Needs root to play the other user. */
static void test_other_users_directory_or_symlink_is_refused(void **state)
{
	struct err e = { 0 };
	char mine[160];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(privdir_make(path, 0, &e), -1);
	assert_non_null(strstr(e.msg, "must be a directory of yours"));
	assert_int_equal(rmdir(path), 0);
	snprintf(mine, sizeof(mine), "%s/mine", base);
	assert_int_equal(mkdir(mine, 0700), 0);
	assert_int_equal(symlink(mine, path), 0);
	assert_int_equal(privdir_make(path, 0, &e), 0); /* our own link: followed */
	assert_int_equal(lchown(path, 65534, 65534), 0);
	assert_int_equal(privdir_make(path, 0, &e), -1);
	assert_non_null(strstr(e.msg, "symlink that another user (uid 65534) owns"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_made_private_and_accepted_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writable_or_readable_by_others_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_file_at_the_path_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_users_directory_or_symlink_is_refused, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
