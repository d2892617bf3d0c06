/* Unit tests of image references (registry/ref.c): docker's form with
 * Docker Hub's defaults, enroot/pyxis's [USER@]HOST#REPO form, the errors
 * that say how to write one, and the text ref_format writes parsing back
 * to the same reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "ref.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct image_ref parse_ok(const char *s)
{
	struct image_ref r;
	struct err e = { 0 };

	if (ref_parse(s, &r, &e) != 0)
		fail_msg("%s: %s", s, e.msg);
	return r;
}

/* The error message of a reference that must be refused. */
static const char *parse_bad(const char *s)
{
	static struct err e;
	struct image_ref r;

	memset(&e, 0, sizeof(e));
	assert_int_equal(ref_parse(s, &r, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "image reference '"));
	assert_non_null(strstr(e.msg, "write docker://"));
	return e.msg;
}

static void test_bare_name_is_docker_hub_library(void **state)
{
	struct image_ref r = parse_ok("ubuntu");

	(void)state;
	assert_string_equal(r.host, "docker.io");
	assert_string_equal(r.repo, "library/ubuntu");
	assert_string_equal(r.tag, "latest");
	assert_string_equal(r.digest, "");
	assert_string_equal(r.user, "");
	assert_string_equal(ref_api_host(&r), "registry-1.docker.io");
}

static void test_docker_prefix_is_optional(void **state)
{
	struct image_ref a = parse_ok("docker://ubuntu:22.04"), b = parse_ok("ubuntu:22.04");

	(void)state;
	assert_memory_equal(&a, &b, sizeof(a));
	assert_string_equal(a.tag, "22.04");
}

static void test_hub_namespace_is_not_a_host(void **state)
{
	struct image_ref r = parse_ok("nvidia/cuda:12.4.1-base-ubuntu22.04");

	(void)state;
	assert_string_equal(r.host, "docker.io");
	assert_string_equal(r.repo, "nvidia/cuda");
	assert_string_equal(r.tag, "12.4.1-base-ubuntu22.04");
}

static void test_hub_aliases_are_docker_io(void **state)
{
	struct image_ref a = parse_ok("index.docker.io/ubuntu"),
			 b = parse_ok("registry-1.docker.io/library/ubuntu"),
			 c = parse_ok("docker.io#ubuntu");

	(void)state;
	assert_string_equal(a.host, "docker.io");
	assert_string_equal(a.repo, "library/ubuntu");
	assert_string_equal(b.host, "docker.io");
	assert_string_equal(b.repo, "library/ubuntu");
	assert_string_equal(c.host, "docker.io");
	assert_string_equal(c.repo, "library/ubuntu");
	assert_string_equal(ref_api_host(&b), "registry-1.docker.io");
	assert_true(ref_is_docker_hub("Index.Docker.IO", 15));
	assert_true(ref_is_docker_hub("docker.io/library", 9)); /* by length, not NUL */
	assert_false(ref_is_docker_hub("docker.io.evil.com", 18));
	assert_false(ref_is_docker_hub("auth.docker.io", 14));
}

static void test_host_with_dot_port_or_localhost(void **state)
{
	struct image_ref a = parse_ok("nvcr.io/nvidia/pytorch:24.06-py3"),
			 b = parse_ok("reg:5000/team/app"), c = parse_ok("localhost/app:1"),
			 d = parse_ok("[::1]:5000/app");

	(void)state;
	assert_string_equal(a.host, "nvcr.io");
	assert_string_equal(a.repo, "nvidia/pytorch");
	assert_string_equal(a.tag, "24.06-py3");
	assert_string_equal(ref_api_host(&a), "nvcr.io");
	assert_string_equal(b.host, "reg:5000");
	assert_string_equal(b.repo, "team/app");
	assert_string_equal(b.tag, "latest");
	assert_string_equal(c.host, "localhost");
	assert_string_equal(c.repo, "app");
	assert_string_equal(d.host, "[::1]:5000");
}

static void test_enroot_user_and_host(void **state)
{
	struct image_ref r = parse_ok("docker://USER@nvcr.io#nvidia/pytorch:24.06-py3");

	(void)state;
	assert_string_equal(r.user, "USER");
	assert_string_equal(r.host, "nvcr.io");
	assert_string_equal(r.repo, "nvidia/pytorch");
	assert_string_equal(r.tag, "24.06-py3");
	assert_string_equal(r.digest, "");
}

static void test_enroot_oauthtoken_user_and_bare_host(void **state)
{
	struct image_ref a = parse_ok("$oauthtoken@nvcr.io#nvidia/cuda"),
			 b = parse_ok("myreg#team/app:2"), c = parse_ok("user@ubuntu");

	(void)state;
	assert_string_equal(a.user, "$oauthtoken");
	assert_string_equal(a.tag, "latest");
	/* With '#', a name without a dot is the host all the same. */
	assert_string_equal(b.host, "myreg");
	assert_string_equal(b.repo, "team/app");
	assert_string_equal(c.user, "user");
	assert_string_equal(c.repo, "library/ubuntu");
}

static void test_ref_is_reference_only_when_written_as_one(void **state)
{
	(void)state;
	assert_true(ref_is_reference("docker://ubuntu"));
	assert_true(ref_is_reference("nvcr.io#nvidia/pytorch:24.06-py3"));
	assert_false(ref_is_reference("ubuntu"));
	assert_false(ref_is_reference("./images/app.sqsh"));
	assert_false(ref_is_reference("nvcr.io/nvidia/pytorch:24.06-py3"));
	/* Written as a path, it is one: how a file of a reference's name is reached. */
	assert_false(ref_is_reference("./docker://ubuntu"));
	assert_false(ref_is_reference("/data/team#app.sqsh"));
	assert_false(ref_is_reference("../a#b"));
	assert_false(ref_is_reference("docker:/reg.io/app:1"));
}

static void test_digest_alone_has_no_tag(void **state)
{
	struct image_ref r = parse_ok("docker://nvcr.io/nvidia/pytorch@sha256:" HEX64);

	(void)state;
	assert_string_equal(r.tag, "");
	assert_string_equal(r.digest, "sha256:" HEX64);
	r = parse_ok("ubuntu@sha256:" HEX64);
	assert_string_equal(r.repo, "library/ubuntu");
	assert_string_equal(r.user, "");
}

static void test_tag_and_digest_both_kept(void **state)
{
	struct image_ref r = parse_ok("user@reg.example.com:443/a/b:v1@sha256:" HEX64);
	char buf[512];

	(void)state;
	assert_string_equal(r.user, "user");
	assert_string_equal(r.host, "reg.example.com:443");
	assert_string_equal(r.tag, "v1");
	assert_string_equal(r.digest, "sha256:" HEX64);
	assert_int_equal(ref_format(&r, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "reg.example.com:443/a/b:v1@sha256:" HEX64);
}

static void test_uppercase_repo_refused_with_how_to_write(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("docker://nvcr.io/NVIDIA/pytorch"),
			       "repository names are lowercase (write docker://HOST/REPO:TAG)"));
}

static void test_bad_digest_names_sha256(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("ubuntu@sha256:abc"), "sha256: and 64 lowercase hex"));
	assert_non_null(strstr(parse_bad("ubuntu@sha512:" HEX64 HEX64), "sha256:"));
	assert_non_null(strstr(parse_bad("ubuntu@sha256:" "0123456789ABCDEF0123456789abcdef"
					 "0123456789abcdef0123456789abcdef"), "lowercase"));
}

static void test_bad_port_refused(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("reg:0/app"), "port"));
	assert_non_null(strstr(parse_bad("reg:65536/app"), "port"));
	assert_non_null(strstr(parse_bad("reg:http/app"), "port"));
}

static void test_repo_and_tag_grammar(void **state)
{
	(void)state;
	parse_ok("a/b__c/d-----e/f.g_h");
	parse_bad("docker://");
	parse_bad("nvcr.io/");
	parse_bad("nvcr.io/a//b");
	parse_bad("a/-b");
	parse_bad("a/b.");
	parse_bad("a/b._c");
	parse_bad("a/b___c");
	parse_bad("ubuntu:");
	parse_bad("ubuntu:.hidden");
	parse_bad("ubuntu:a+b");
	parse_bad("ubuntu:" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	parse_bad("bad_host.io/app");
	parse_bad("-bad.io/app");
	parse_bad("#app");
	parse_bad("a#b#c");
	parse_bad("reg.io/a b");
	parse_bad(HEX64);
}

static void test_user_with_password_refused(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("me:secret@nvcr.io#nvidia/cuda"), "login, not a password"));
}

static void test_name_longer_than_255_refused(void **state)
{
	char s[400];

	(void)state;
	memset(s, 'a', sizeof(s));
	memcpy(s, "reg.io/", 7);
	s[7 + 249] = '\0'; /* 7 + 249 = 256 characters */
	assert_non_null(strstr(parse_bad(s), "255"));
	s[7 + 248] = '\0';
	parse_ok(s);
}

static void test_format_parses_back_to_the_same_reference(void **state)
{
	static const char *const refs[] = {
		"ubuntu", "nvidia/cuda:12.4.1-base-ubuntu22.04", "myreg#app", "myreg:5000#app:1",
		"localhost/app", "[::1]:5000/x/y@sha256:" HEX64, "u@nvcr.io#nvidia/pytorch:24.06-py3",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) {
		struct image_ref a = parse_ok(refs[i]), b;
		char buf[512];

		assert_int_equal(ref_format(&a, buf, sizeof(buf)), 0);
		b = parse_ok(buf);
		assert_string_equal(a.host, b.host);
		assert_string_equal(a.repo, b.repo);
		assert_string_equal(a.tag, b.tag);
		assert_string_equal(a.digest, b.digest);
	}
}

static void test_format_writes_hub_and_bare_hosts(void **state)
{
	struct image_ref a = parse_ok("ubuntu"), b = parse_ok("myreg#team/app:2");
	char buf[64];

	(void)state;
	assert_int_equal(ref_format(&a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "docker.io/library/ubuntu:latest");
	assert_int_equal(ref_format(&b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "myreg#team/app:2");
	assert_int_equal(ref_format(&a, buf, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bare_name_is_docker_hub_library),
		cmocka_unit_test(test_docker_prefix_is_optional),
		cmocka_unit_test(test_hub_namespace_is_not_a_host),
		cmocka_unit_test(test_hub_aliases_are_docker_io),
		cmocka_unit_test(test_host_with_dot_port_or_localhost),
		cmocka_unit_test(test_enroot_user_and_host),
		cmocka_unit_test(test_enroot_oauthtoken_user_and_bare_host),
		cmocka_unit_test(test_ref_is_reference_only_when_written_as_one),
		cmocka_unit_test(test_digest_alone_has_no_tag),
		cmocka_unit_test(test_tag_and_digest_both_kept),
		cmocka_unit_test(test_uppercase_repo_refused_with_how_to_write),
		cmocka_unit_test(test_bad_digest_names_sha256),
		cmocka_unit_test(test_bad_port_refused),
		cmocka_unit_test(test_repo_and_tag_grammar),
		cmocka_unit_test(test_user_with_password_refused),
		cmocka_unit_test(test_name_longer_than_255_refused),
		cmocka_unit_test(test_format_parses_back_to_the_same_reference),
		cmocka_unit_test(test_format_writes_hub_and_bare_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
