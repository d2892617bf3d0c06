/* Unit tests of the image store's names and records (registry/store.c)
 * and of the same-origin rule that keeps credentials off redirects
 * (registry/http.c: http_origin). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "http.h"
#include "ref.h"
#include "rootpath.h"
#include "store.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_digest_must_be_sha256_and_64_lowercase_hex(void **state)
{
	(void)state;
	assert_true(digest_valid("sha256:" HEX64));
	assert_false(digest_valid("sha512:" HEX64));
	assert_false(digest_valid("sha256:" HEX64 "0"));
	assert_false(digest_valid("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false(digest_valid("sha256:../../etc/passwd"));
	assert_false(digest_valid(""));
}

static void test_image_and_blob_paths_by_digest(void **state)
{
	char p[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(store_image("/s", "sha256:" HEX64, p, sizeof(p), &e), 0);
	assert_string_equal(p, "/s/images/sha256-" HEX64 ".sqsh");
	assert_int_equal(store_blob("/s", "sha256:" HEX64, p, sizeof(p), &e), 0);
	assert_string_equal(p, "/s/blobs/sha256/" HEX64);
	/* A digest from a hostile manifest never becomes a path. */
	assert_int_equal(store_blob("/s", "sha256:../../../../tmp/x", p, sizeof(p), &e), -1);
}

static void test_tag_record_written_and_read_back(void **state)
{
	char dir[] = "/tmp/ctrun-test-store.XXXXXX", d[80];
	struct image_ref r;
	struct err e = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_init(dir, &e), 0);
	assert_int_equal(ref_parse("docker://reg.example:5000/team/app:v1", &r, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 0);
	assert_int_equal(store_ref_write(dir, &r, r.tag, "sha256:" HEX64, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 1);
	assert_string_equal(d, "sha256:" HEX64);
	/* The same repository by another tag has no record. */
	assert_int_equal(ref_parse("docker://reg.example:5000/team/app:v2", &r, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 0);
	remove_tree(dir);
}

static void test_store_is_private_to_its_user(void **state)
{
	char dir[] = "/tmp/ctrun-test-store.XXXXXX", sub[PATH_MAX];
	struct stat st;
	struct err e = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/new", dir);
	assert_int_equal(store_init(sub, &e), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
	remove_tree(dir);
}

static void test_origin_is_scheme_host_and_port(void **state)
{
	char o[256];

	(void)state;
	assert_int_equal(http_origin("https://Reg.Example:5000/v2/x/blobs/sha256:1", o, sizeof(o)), 0);
	assert_string_equal(o, "https://reg.example:5000");
	assert_int_equal(http_origin("https://user:pw@blobs.example/path?x=1", o, sizeof(o)), 0);
	assert_string_equal(o, "https://blobs.example");
	assert_int_equal(http_origin("http://reg.example:5000", o, sizeof(o)), 0);
	assert_string_equal(o, "http://reg.example:5000");
	assert_int_equal(http_origin("no-scheme/path", o, sizeof(o)), -1);
}

static void test_redirect_to_other_port_or_scheme_is_another_origin(void **state)
{
	char a[256], b[256];

	(void)state;
	assert_int_equal(http_origin("https://reg.example/v2/", a, sizeof(a)), 0);
	assert_int_equal(http_origin("https://reg.example:8443/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(http_origin("http://reg.example/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(http_origin("https://reg.example.evil/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_must_be_sha256_and_64_lowercase_hex),
		cmocka_unit_test(test_image_and_blob_paths_by_digest),
		cmocka_unit_test(test_tag_record_written_and_read_back),
		cmocka_unit_test(test_store_is_private_to_its_user),
		cmocka_unit_test(test_origin_is_scheme_host_and_port),
		cmocka_unit_test(test_redirect_to_other_port_or_scheme_is_another_origin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
