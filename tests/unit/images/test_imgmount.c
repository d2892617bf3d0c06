/* Unit tests: when an image can be mounted instead of unpacked, and the
 * reason given when it cannot (the line `ctrun -v` prints on fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "imgmount.h"

static void test_only_squashfs_and_sif_mount(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_false(image_mount_possible(IMAGE_DOCKER_ARCHIVE, true, &why));
	assert_non_null(strstr(why, "only a squashfs or a SIF"));
	why = NULL;
	assert_false(image_mount_possible(IMAGE_DIR, false, &why));
	assert_non_null(why);
}

static void test_a_user_without_squashfuse_is_told_the_package(void **state)
{
	const char *why = NULL;
	char *old = getenv("PATH") != NULL ? strdup(getenv("PATH")) : NULL;

	(void)state;
	setenv("PATH", "/nonexistent", 1);
	assert_false(image_mount_possible(IMAGE_SQUASHFS, false, &why));
	assert_string_equal(why, "squashfuse_ll is not installed (apt install squashfuse)");
	if (old != NULL)
		setenv("PATH", old, 1);
	free(old);
}

static void test_absolute_paths_only_for_squashfuse(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(image_mount_fuse("-o allow_other", 0, "/tmp/x", &e), -1);
	assert_non_null(strstr(e.msg, "must be absolute"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_squashfs_and_sif_mount),
		cmocka_unit_test(test_a_user_without_squashfuse_is_told_the_package),
		cmocka_unit_test(test_absolute_paths_only_for_squashfuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
