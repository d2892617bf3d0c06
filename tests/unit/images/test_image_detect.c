/* Unit tests: the image kind comes from the bytes, never the file name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "image.h"
#define CTRTEST_ARCHIVES
#include "ctrtest.h"
#include "rootpath.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ctrun-test-detect-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static const char *file_with(const char *name, const void *bytes, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	fclose(f);
	return path;
}

static enum image_kind detect_ok(const char *path)
{
	struct err e = { 0 };
	enum image_kind k = IMAGE_UNKNOWN;

	if (image_detect(path, &k, &e) < 0)
		fail_msg("%s: %s", path, e.msg);
	return k;
}

static void test_squashfs_named_like_a_tar(void **state)
{
	unsigned char b[256] = "hsqs";

	(void)state;
	assert_int_equal(detect_ok(file_with("image.tar", b, sizeof(b))), IMAGE_SQUASHFS);
}

static void test_sif_named_like_a_squashfs(void **state)
{
	unsigned char b[256] = "#!/usr/bin/env run-singularity\n";

	(void)state;
	memcpy(b + 32, "SIF_MAGIC", 10);
	assert_int_equal(detect_ok(file_with("image.sqsh", b, sizeof(b))), IMAGE_SIF);
}

static void test_docker_archive_named_sif(void **state)
{
	const struct member l[] = { { "etc/x", 'f', "x", 0 } };
	struct blob layer = tar_blob(l, 1, 0);
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/image.sif", dir);
	make_docker_archive(path, &layer, 1, 0);
	assert_int_equal(detect_ok(path), IMAGE_DOCKER_ARCHIVE);
	make_docker_archive(path, &layer, 1, 1); /* gzip */
	assert_int_equal(detect_ok(path), IMAGE_DOCKER_ARCHIVE);
	blob_free(&layer);
}

static void test_oci_archive(void **state)
{
	const struct member l[] = { { "etc/x", 'f', "x", 0 } };
	struct blob layer = tar_blob(l, 1, 1);
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/image", dir);
	make_oci_archive(path, &layer, 1);
	assert_int_equal(detect_ok(path), IMAGE_OCI_ARCHIVE);
	blob_free(&layer);
}

static void test_directory_is_a_rootfs(void **state)
{
	(void)state;
	assert_int_equal(detect_ok(dir), IMAGE_DIR);
}

static void expect_unknown(const char *path)
{
	struct err e = { 0 };
	enum image_kind k;

	assert_int_equal(image_detect(path, &k, &e), -1);
	assert_int_equal(k, IMAGE_UNKNOWN);
	assert_int_equal(e.code, EXIT_CTRUN);
}

static void test_plain_tar_without_manifest_is_unknown(void **state)
{
	const struct member m[] = { { "etc/x", 'f', "x", 0 } };
	struct blob b = tar_blob(m, 1, 0);

	(void)state;
	expect_unknown(file_with("rootfs.tar", b.data, b.len));
	blob_free(&b);
}

static void test_garbage_and_empty_files_are_unknown(void **state)
{
	unsigned char junk[1000];

	(void)state;
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	expect_unknown(file_with("junk.sqsh", junk, sizeof(junk)));
	expect_unknown(file_with("empty.sif", "", 0));
	expect_unknown(file_with("short", "hsq", 3));
}

static void test_missing_file_names_the_path(void **state)
{
	struct err e = { 0 };
	enum image_kind k;

	(void)state;
	assert_int_equal(image_detect("/nonexistent/image.sqsh", &k, &e), -1);
	assert_non_null(strstr(e.msg, "/nonexistent/image.sqsh"));
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(image_kind_name(IMAGE_SQUASHFS), "squashfs");
	assert_string_equal(image_kind_name(IMAGE_SIF), "sif");
	assert_string_equal(image_kind_name(IMAGE_DOCKER_ARCHIVE), "docker-archive");
	assert_string_equal(image_kind_name(IMAGE_OCI_ARCHIVE), "oci-archive");
	assert_string_equal(image_kind_name(IMAGE_DIR), "dir");
	assert_string_equal(image_kind_name(IMAGE_UNKNOWN), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_squashfs_named_like_a_tar),
		cmocka_unit_test(test_sif_named_like_a_squashfs),
		cmocka_unit_test(test_docker_archive_named_sif),
		cmocka_unit_test(test_oci_archive),
		cmocka_unit_test(test_directory_is_a_rootfs),
		cmocka_unit_test(test_plain_tar_without_manifest_is_unknown),
		cmocka_unit_test(test_garbage_and_empty_files_are_unknown),
		cmocka_unit_test(test_missing_file_names_the_path),
		cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
