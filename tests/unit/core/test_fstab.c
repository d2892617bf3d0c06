/* Unit tests: fstab lines as enroot's getmntent reads them (fstab.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fstab.h"
#include "strv.h"

static void test_fstab_escape_table(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(fstab_escape("a b\tc\nd\\e", out, sizeof(out)), 0);
	assert_string_equal(out, "a\\040b\\011c\\012d\\134e");
	assert_int_equal(fstab_escape("plain/$x'\"", out, sizeof(out)), 0);
	assert_string_equal(out, "plain/$x'\"");
	assert_int_equal(fstab_escape("   ", out, 8), -1); /* 12 bytes + NUL do not fit */
}

static void test_line_escapes_both_paths_and_refuses_newlines(void **state)
{
	struct strv lines = { 0 };

	(void)state;
	assert_int_equal(fstab_line(&lines, "/data/my set", "/in\tside", "x-create=auto,rbind"), 0);
	assert_int_equal(lines.n, 1);
	assert_string_equal(lines.v[0], "/data/my\\040set /in\\011side none x-create=auto,rbind");
	assert_int_equal(fstab_line(&lines, "/dev/nvidia0", "/two\nlines", "bind"), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(lines.n, 1);
	strv_free(&lines);
}

/* enroot-mount reads at most FSTAB_LINE_MAX - 1 bytes a line, newline
 * included: longer would be cut silently, so it is refused. */
static void test_line_longer_than_enroot_reads_is_refused(void **state)
{
	struct strv lines = { 0 };
	char src[2048], dst[2048];

	(void)state;
	memset(src, 'a', sizeof(src) - 1);
	src[0] = '/';
	src[sizeof(src) - 1] = '\0';
	memset(dst, 'b', sizeof(dst) - 1);
	dst[0] = '/';
	dst[sizeof(dst) - 1] = '\0';
	assert_int_equal(fstab_line(&lines, src, dst, "x-create=auto,rbind"), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	dst[sizeof(dst) - 1 - 40] = '\0'; /* 2047 + 1 + 2007 + 6 + 19 = 4080: fits */
	assert_int_equal(fstab_line(&lines, src, dst, "x-create=auto,rbind"), 0);
	assert_true(strlen(lines.v[0]) + 2 <= FSTAB_LINE_MAX);
	memset(src, ' ', 600); /* 600 spaces are 2400 bytes escaped */
	src[0] = '/';
	assert_int_equal(fstab_line(&lines, src, dst, "x-create=auto,rbind"), -1);
	assert_int_equal(lines.n, 1);
	strv_free(&lines);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fstab_escape_table),
		cmocka_unit_test(test_line_escapes_both_paths_and_refuses_newlines),
		cmocka_unit_test(test_line_longer_than_enroot_reads_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
