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

/* The rule the shared cache and the image store share (trust_check). */
static struct stat st_of(mode_t mode, uid_t uid, gid_t gid)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = mode;
	st.st_uid = uid;
	st.st_gid = gid;
	return st;
}

static void test_trust_user_root_and_group(void **state)
{
	const struct trust user = { 1000, true, TRUST_NO_GROUP };
	const struct trust root_only = { 0, true, TRUST_NO_GROUP };
	const struct trust group = { 1000, true, 500 };
	struct stat st;
	char why[128];

	(void)state;
	/* The caller's and root's, writable by no one else: trusted. */
	st = st_of(S_IFDIR | 0700, 1000, 1000);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), 0);
	st = st_of(S_IFDIR | 0755, 0, 0);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), 0);
	st = st_of(S_IFREG | 0644, 1000, 1000);
	assert_int_equal(trust_check(&st, false, &user, why, sizeof(why)), 0);
	/* Another user's, even read-only: not. */
	st = st_of(S_IFDIR | 0755, 1001, 1001);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), -1);
	assert_string_equal(why, "owned by uid 1001, neither yours (uid 1000) nor root's");
	assert_int_equal(trust_check(&st, true, &root_only, why, sizeof(why)), -1);
	assert_string_equal(why, "not owned by root");
	/* Writable by group or others: not, unless the group is the store's. */
	st = st_of(S_IFDIR | 0777, 1000, 1000);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), -1);
	assert_string_equal(why, "writable by group or others");
	st = st_of(S_IFDIR | 02770, 1001, 500);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), -1);
	assert_int_equal(trust_check(&st, true, &group, why, sizeof(why)), 0);
	st = st_of(S_IFDIR | 02770, 1001, 501);
	assert_int_equal(trust_check(&st, true, &group, why, sizeof(why)), -1);
	assert_string_equal(why, "writable by group 501");
	st = st_of(S_IFDIR | 02777, 1001, 500);
	assert_int_equal(trust_check(&st, true, &group, why, sizeof(why)), -1);
	assert_string_equal(why, "writable by others");
	st = st_of(S_IFDIR | 01777, 0, 0); /* a /tmp is no store */
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), -1);
	/* The wrong kind of file. */
	st = st_of(S_IFLNK | 0777, 1000, 1000);
	assert_int_equal(trust_check(&st, false, &user, why, sizeof(why)), -1);
	assert_string_equal(why, "a symlink");
	st = st_of(S_IFIFO | 0644, 1000, 1000);
	assert_int_equal(trust_check(&st, false, &user, why, sizeof(why)), -1);
	assert_string_equal(why, "not a regular file");
	st = st_of(S_IFREG | 0644, 1000, 1000);
	assert_int_equal(trust_check(&st, true, &user, why, sizeof(why)), -1);
	assert_string_equal(why, "not a directory");
}

/* The default name taken first by someone else (another user's directory
 * at /tmp/ctrun-UID): a name of our own beside it, made once and found
 * again by the next run. */
static void test_a_taken_default_falls_back_to_one_of_ours(void **state)
{
	char out[256], again[256], taken[160];
	struct err e = { 0 };

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(taken, sizeof(taken), "%s/ctrun-0", base);
	assert_int_equal(mkdir(taken, 0700), 0);
	assert_int_equal(chown(taken, 64201, 64201), 0);
	assert_int_equal(privdir_default(base, "ctrun-0", out, sizeof(out), &e), 0);
	assert_true(strncmp(out, taken, strlen(taken)) == 0 && out[strlen(taken)] == '.');
	assert_int_equal(privdir_default(base, "ctrun-0", again, sizeof(again), &e), 0);
	assert_string_equal(again, out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_made_private_and_accepted_again, setup, teardown),
		cmocka_unit_test(test_trust_user_root_and_group),
		cmocka_unit_test_setup_teardown(test_writable_or_readable_by_others_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_file_at_the_path_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_taken_default_falls_back_to_one_of_ours, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_other_users_directory_or_symlink_is_refused, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
