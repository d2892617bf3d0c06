/* Unit tests: when an image can be mounted instead of unpacked, and the
 * reason given when it cannot (the line `ctrun -v` prints on fallback). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unpack/imgmount.h"
#include "rootpath.h"
#include "unpack/unpack.h"

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

/* The loop device sees the squashfs's window, nothing after it. */
static void test_loop_device_is_bounded_to_the_partition(void **state)
{
	struct loop_info64 info;

	(void)state;
	image_loop_info(1 << 20, 8192, &info);
	assert_int_equal(info.lo_offset, 1 << 20);
	assert_int_equal(info.lo_sizelimit, 8192);
	assert_true(info.lo_flags & LO_FLAGS_READ_ONLY);
	assert_true(info.lo_flags & LO_FLAGS_AUTOCLEAR);
}

static void test_window_is_bytes_used_rounded_within_its_region(void **state)
{
	(void)state;
	assert_int_equal(squashfs_window(4096, 1 << 20), 4096);
	assert_int_equal(squashfs_window(5000, 1 << 20), 8192);  /* mksquashfs's 4 KiB padding */
	assert_int_equal(squashfs_window(5000, 6000), 6000);     /* never past the partition */
	assert_int_equal(squashfs_window(~0ULL - 5, 100), 100); /* no overflow to a small size */
}

/* A .sqsh with something after its file system: the window ends at the
 * squashfs (bytes_used, padded), not at the file's end. */
static void test_region_of_a_sqsh_ends_at_its_file_system(void **state)
{
	char top[] = "/tmp/ctrun-test-imgmount-XXXXXX", cmd[512], img[128];
	unsigned long long off = 1, size = 0;
	struct err e = { 0 };
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(img, sizeof(img), "%s/img.sqsh", top);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/tree/etc && echo hi > %s/tree/etc/motd && "
		 "mksquashfs %s/tree %s -quiet -no-progress >/dev/null", top, top, top, img);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(stat(img, &st), 0);
	fd = open(img, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "another object", 14), 14);
	close(fd);
	assert_int_equal(squashfs_region(img, IMAGE_SQUASHFS, &off, &size, &e), 0);
	assert_int_equal(off, 0);
	assert_int_equal(size, st.st_size);   /* mksquashfs padded it to 4 KiB */
	assert_int_equal(size % 4096, 0);
	remove_tree(top);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_squashfs_and_sif_mount),
		cmocka_unit_test(test_a_user_without_squashfuse_is_told_the_package),
		cmocka_unit_test(test_absolute_paths_only_for_squashfuse),
		cmocka_unit_test(test_loop_device_is_bounded_to_the_partition),
		cmocka_unit_test(test_window_is_bytes_used_rounded_within_its_region),
		cmocka_unit_test(test_region_of_a_sqsh_ends_at_its_file_system),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
