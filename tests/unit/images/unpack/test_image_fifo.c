/* Unit tests: an image file that is a FIFO (a group member can put one at
 * a name in a shared image store) is refused at once with a line that says
 * so; nothing blocks waiting for a writer. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include "ctrtest.h"
#include "unpack/imgmount.h"
#include "unpack/unpack.h"

/* A blocked open ends the test program (SIGALRM), a failure. */
#define GUARD_S 30

static const char *fifo_in(struct tmpdir *td)
{
	const char *p = tmpdir_path(td, "sha256-planted.sqsh");

	assert_int_equal(mkfifo(p, 0666), 0);
	return p;
}

static void test_squashfs_check_refuses_a_fifo(void **state)
{
	const char *p = fifo_in(*state);
	struct err e = { 0 };

	alarm(GUARD_S);
	assert_int_equal(squashfs_check(p, 0, 0, NULL, &e), -1);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
}

static void test_squashfs_region_of_a_sif_refuses_a_fifo(void **state)
{
	const char *p = fifo_in(*state);
	unsigned long long off, size;
	struct err e = { 0 };

	alarm(GUARD_S);
	assert_int_equal(squashfs_region(p, IMAGE_SIF, &off, &size, &e), -1);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
}

static void test_kernel_mount_refuses_a_fifo(void **state)
{
	struct tmpdir *td = *state;
	const char *p = fifo_in(td);
	struct err e = { 0 };

	alarm(GUARD_S);
	assert_int_equal(image_mount_kernel(p, 0, 4096, td->dir, &e), -1);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, tmpdir_setup, tmpdir_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_squashfs_check_refuses_a_fifo),
		T(test_squashfs_region_of_a_sif_refuses_a_fifo),
		T(test_kernel_mount_refuses_a_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
