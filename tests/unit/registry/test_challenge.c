/* Unit tests of WWW-Authenticate challenges and token answers
 * (registry/challenge.c): RFC 7235 syntax as registries send it (Docker
 * Hub, nvcr.io, GHCR, Harbor's Basic), several challenges in one value,
 * bounded fields, and the token spec's token / access_token / expires_in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "challenge.h"

static struct challenge parse_ok(const char *value)
{
	struct challenge c;
	struct err e = { 0 };

	if (challenge_parse(value, &c, &e) != 0)
		fail_msg("%s: %s", value, e.msg);
	return c;
}

static const char *parse_bad(const char *value)
{
	static struct err e;
	struct challenge c;

	memset(&e, 0, sizeof(e));
	assert_int_equal(challenge_parse(value, &c, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	return e.msg;
}

static void test_docker_hub_bearer(void **state)
{
	struct challenge c = parse_ok("Bearer realm=\"https://auth.docker.io/token\","
				      "service=\"registry.docker.io\","
				      "scope=\"repository:library/ubuntu:pull\"");

	(void)state;
	assert_int_equal(c.scheme, AUTH_BEARER);
	assert_string_equal(c.realm, "https://auth.docker.io/token");
	assert_string_equal(c.service, "registry.docker.io");
	assert_string_equal(c.scope, "repository:library/ubuntu:pull");
}

static void test_scheme_and_param_names_case_insensitive(void **state)
{
	struct challenge c = parse_ok("bEARER  REALM = \"https://nvcr.io/proxy_auth\" ,  "
				      "Service=ngc");

	(void)state;
	assert_int_equal(c.scheme, AUTH_BEARER);
	assert_string_equal(c.realm, "https://nvcr.io/proxy_auth");
	assert_string_equal(c.service, "ngc"); /* a token value, unquoted */
	assert_string_equal(c.scope, "");
}

static void test_quoted_string_backslash_escapes(void **state)
{
	struct challenge c = parse_ok("Bearer realm=\"https://r.io/t\",service=\"a\\\"b\\\\c\\d\","
				      "scope=\"x,y=z\"");

	(void)state;
	assert_string_equal(c.service, "a\"b\\cd");
	assert_string_equal(c.scope, "x,y=z"); /* a comma inside quotes is no separator */
}

static void test_basic_with_realm(void **state)
{
	struct challenge c = parse_ok("Basic realm=\"Harbor\", charset=\"UTF-8\"");

	(void)state;
	assert_int_equal(c.scheme, AUTH_BASIC);
	assert_string_equal(c.realm, "Harbor");
}

static void test_first_bearer_wins_over_basic(void **state)
{
	struct challenge c = parse_ok("Basic realm=\"reg\", Bearer realm=\"https://a.io/t\","
				      "service=\"a\", Bearer realm=\"https://b.io/t\"");

	(void)state;
	assert_int_equal(c.scheme, AUTH_BEARER);
	assert_string_equal(c.realm, "https://a.io/t");
	assert_string_equal(c.service, "a");
}

static void test_unknown_schemes_params_and_token68_ignored(void **state)
{
	struct challenge c = parse_ok("Negotiate, NTLM abc+/def==, Basic realm=\"r\", "
				      "Bearer realm=\"https://x.io/t\",error=\"invalid_token\","
				      "error_description=\"expired\"");
	struct challenge n = parse_ok("Negotiate YIIB9wYGKwYBBQUCoIIB7TCCAek=");

	(void)state;
	assert_int_equal(c.scheme, AUTH_BEARER);
	assert_string_equal(c.realm, "https://x.io/t");
	assert_int_equal(n.scheme, AUTH_NONE);
	assert_int_equal(parse_ok("").scheme, AUTH_NONE);
}

static void test_repeated_param_keeps_the_first(void **state)
{
	struct challenge c = parse_ok("Bearer realm=\"https://a.io/t\",realm=\"https://evil.io/t\"");

	(void)state;
	assert_string_equal(c.realm, "https://a.io/t");
}

static void test_bearer_without_realm_refused(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("Bearer service=\"x\""), "without a realm"));
}

static void test_realm_must_be_http_url(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("Bearer realm=\"file:///etc/passwd\""), "http(s) URL"));
	assert_non_null(strstr(parse_bad("Bearer realm=\"https://a.io/t x\""), "http(s) URL"));
	parse_ok("Bearer realm=\"http://plain.local:5000/token\"");
}

static void test_broken_syntax_refused(void **state)
{
	(void)state;
	assert_non_null(strstr(parse_bad("Bearer realm=\"https://a.io/t"), "unterminated"));
	assert_non_null(strstr(parse_bad("Bearer realm=\"https://a.io/\x01t\""), "control"));
	assert_non_null(strstr(parse_bad("Bearer service=x, realm="), "expected a value"));
	assert_non_null(strstr(parse_bad("Bearer realm=\"https://a.io/t\" service=x"), "expected ','"));
	assert_non_null(strstr(parse_bad("Bearer foo bar"), "expected NAME=VALUE"));
	assert_non_null(strstr(parse_bad("=x"), "expected an auth scheme"));
}

static void test_too_long_field_refused(void **state)
{
	char *v = malloc(2048);
	struct challenge c;
	struct err e = { 0 };

	(void)state;
	strcpy(v, "Bearer realm=\"https://a.io/t\",scope=\"");
	memset(v + strlen(v), 's', 600);
	strcpy(v + 37 + 600, "\"");
	assert_int_equal(challenge_parse(v, &c, &e), -1);
	assert_non_null(strstr(e.msg, "too long"));
	/* The same length in a param nobody reads is fine. */
	memcpy(v + 30, "other", 5);
	assert_int_equal(challenge_parse(v, &c, &e), 0);
	free(v);
}

static void test_token_field_and_expiry(void **state)
{
	static const char body[] = "{\"token\":\"eyJhbGciOi.x-y_z\",\"access_token\":\"other\","
				   "\"expires_in\":300,\"issued_at\":\"2024-01-01T00:00:00Z\"}";
	char tok[64];
	long exp = 0;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(token_parse(body, strlen(body), tok, sizeof(tok), &exp, &e), 0);
	assert_string_equal(tok, "eyJhbGciOi.x-y_z");
	assert_int_equal(exp, 300);
}

static void test_access_token_when_token_absent_or_empty(void **state)
{
	static const char a[] = "{\"access_token\":\"abc\"}", b[] = "{\"token\":\"\","
		"\"access_token\":\"def\",\"expires_in\":5}";
	char tok[64];
	long exp = 0;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(token_parse(a, strlen(a), tok, sizeof(tok), &exp, &e), 0);
	assert_string_equal(tok, "abc");
	assert_int_equal(exp, 60); /* absent: the spec's 60 s */
	assert_int_equal(token_parse(b, strlen(b), tok, sizeof(tok), &exp, &e), 0);
	assert_string_equal(tok, "def");
	assert_int_equal(exp, 60); /* below 60: 60 */
}

static void test_token_refusals(void **state)
{
	static const char *const bodies[] = {
		"{}", "{\"token\":42}", "{\"token\":\"a b\"}", "{\"token\":\"a\\nb\"}",
		"{\"token\":\"\\u00e9t\\u00e9\"}", "[\"token\"]", "{\"token\":\"abc\"} {}", "",
	};
	char tok[64];
	long exp;

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(*bodies); i++) {
		struct err e = { 0 };

		assert_int_equal(token_parse(bodies[i], strlen(bodies[i]), tok, sizeof(tok), &exp, &e),
				 -1);
		assert_int_equal(e.code, EXIT_CTRUN);
	}
}

static void test_token_longer_than_buffer_refused(void **state)
{
	static const char body[] = "{\"token\":\"0123456789\"}";
	char tok[11];
	long exp;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(token_parse(body, strlen(body), tok, 10, &exp, &e), -1);
	assert_non_null(strstr(e.msg, "longer than 9 bytes"));
	assert_int_equal(token_parse(body, strlen(body), tok, sizeof(tok), &exp, &e), 0);
	assert_string_equal(tok, "0123456789");
}

static void test_token_body_read_by_length(void **state)
{
	static const char body[] = "{\"token\":\"abc\"}XXXX";
	char tok[16];
	long exp;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(token_parse(body, strlen(body) - 4, tok, sizeof(tok), &exp, &e), 0);
	assert_string_equal(tok, "abc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_hub_bearer),
		cmocka_unit_test(test_scheme_and_param_names_case_insensitive),
		cmocka_unit_test(test_quoted_string_backslash_escapes),
		cmocka_unit_test(test_basic_with_realm),
		cmocka_unit_test(test_first_bearer_wins_over_basic),
		cmocka_unit_test(test_unknown_schemes_params_and_token68_ignored),
		cmocka_unit_test(test_repeated_param_keeps_the_first),
		cmocka_unit_test(test_bearer_without_realm_refused),
		cmocka_unit_test(test_realm_must_be_http_url),
		cmocka_unit_test(test_broken_syntax_refused),
		cmocka_unit_test(test_too_long_field_refused),
		cmocka_unit_test(test_token_field_and_expiry),
		cmocka_unit_test(test_access_token_when_token_absent_or_empty),
		cmocka_unit_test(test_token_refusals),
		cmocka_unit_test(test_token_longer_than_buffer_refused),
		cmocka_unit_test(test_token_body_read_by_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
