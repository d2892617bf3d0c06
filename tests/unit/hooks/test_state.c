/* Unit tests: ctrun-hook's OCI state and config.json parsers refuse what a
 * broken or hostile runtime could hand them, with a message naming the
 * field. (hooks/ is not in libctrun.a: the sources are compiled in.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "state.h"

static int parse_state(const char *json, struct hook_state *s, struct err *e)
{
	return hook_state_parse(json, strlen(json), s, e);
}

static void test_state_from_runc(void **state)
{
	/* What runc 1.1 writes to a createContainer hook. */
	const char *json = "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t2-5\",\"status\":\"creating\","
			   "\"pid\":111,\"bundle\":\"/tmp/b\",\"annotations\":{}}\n";
	struct hook_state s;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(parse_state(json, &s, &e), 0);
	assert_string_equal(s.id, "t2-5");
	assert_string_equal(s.bundle, "/tmp/b");
	assert_string_equal(s.status, "creating");
	assert_int_equal(s.pid, 111);
	hook_state_free(&s);
}

static void expect_state_error(const char *json, const char *needle)
{
	struct hook_state s;
	struct err e = { 0 };

	assert_int_equal(parse_state(json, &s, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (strstr(e.msg, needle) == NULL)
		fail_msg("'%s' does not mention '%s'", e.msg, needle);
	assert_null(strchr(e.msg, '\n'));
}

static void test_state_refuses_malformed_json(void **state)
{
	(void)state;
	expect_state_error("{\"ociVersion\":\"1.0.2\",\"id\":\"x\",", "not valid JSON");
	expect_state_error("", "empty");
	expect_state_error("[1,2]", "not a JSON object");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/b\"} {}",
			   "unexpected data after");
}

static void test_state_refuses_missing_or_mistyped_fields(void **state)
{
	(void)state;
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\"}", "missing \"bundle\"");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":7}",
			   "\"bundle\" is not a string");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/b\",\"pid\":\"12\"}",
			   "\"pid\" is not an integer");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/b\",\"pid\":-4}",
			   "out of range");
}

static void test_state_refuses_relative_and_dotted_bundles(void **state)
{
	(void)state;
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"bundle\"}",
			   "not a clean absolute path");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/tmp/../etc\"}",
			   "not a clean absolute path");
	expect_state_error("{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/tmp//b\"}",
			   "not a clean absolute path");
}

static void test_state_refuses_embedded_nul(void **state)
{
	const char json[] = "{\"ociVersion\":\"1\",\"id\":\"x\",\"bundle\":\"/b\0/c\"}";
	struct hook_state s;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_state_parse(json, sizeof(json) - 1, &s, &e), -1);
	assert_non_null(strstr(e.msg, "NUL"));
}

static void test_config_relative_root_and_annotations(void **state)
{
	const char *json = "{\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
			   "\"process\":{\"env\":[\"PATH=/bin\",\"SLURM_LOCALID=1\"]},"
			   "\"annotations\":{\"org.ctrun.enabled\":\"true\","
			   "\"org.ctrun.gpus\":\"2,3\",\"org.ctrun.gpu-mode\":\"task\"}}";
	struct hook_config c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_config_parse(json, strlen(json), "/run/b", &c, &e), 0);
	assert_string_equal(c.root, "/run/b/rootfs");
	assert_true(c.readonly);
	assert_true(c.enabled);
	assert_string_equal(c.ann_gpus, "2,3");
	assert_string_equal(c.ann_mode, "task");
	assert_int_equal(c.env.n, 2);
	assert_string_equal(c.env.v[1], "SLURM_LOCALID=1");
	hook_config_free(&c);
}

static void expect_config_error(const char *json, const char *needle)
{
	struct hook_config c;
	struct err e = { 0 };

	assert_int_equal(hook_config_parse(json, strlen(json), "/run/b", &c, &e), -1);
	if (strstr(e.msg, needle) == NULL)
		fail_msg("'%s' does not mention '%s'", e.msg, needle);
}

static void test_config_refuses_bad_root_env_and_annotations(void **state)
{
	(void)state;
	expect_config_error("{}", "missing \"root\"");
	expect_config_error("{\"root\":{\"path\":\"../../etc\"}}", "not a clean path");
	expect_config_error("{\"root\":{\"path\":\"/x/./y\"}}", "not a clean path");
	expect_config_error("{\"root\":{\"path\":\"r\"},\"process\":{\"env\":\"A=1\"}}",
			    "process.env is not an array");
	expect_config_error("{\"root\":{\"path\":\"r\"},\"process\":{\"env\":[1]}}",
			    "process.env[0] is not a string");
	expect_config_error("{\"root\":{\"path\":\"r\"},\"annotations\":{\"org.ctrun.gpus\":[0]}}",
			    "\"org.ctrun.gpus\" is not a string");
	expect_config_error("{\"root\":{\"path\":\"r\"},\"annotations\":{\"org.ctrun.gpu-mode\":"
			    "\"both\"}}", "is not node or task");
}

static void test_config_load_refuses_missing_bundle(void **state)
{
	struct hook_config c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_config_load("/nonexistent-ctrun-bundle", &c, &e), -1);
	assert_non_null(strstr(e.msg, "cannot open config.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_from_runc),
		cmocka_unit_test(test_state_refuses_malformed_json),
		cmocka_unit_test(test_state_refuses_missing_or_mistyped_fields),
		cmocka_unit_test(test_state_refuses_relative_and_dotted_bundles),
		cmocka_unit_test(test_state_refuses_embedded_nul),
		cmocka_unit_test(test_config_relative_root_and_annotations),
		cmocka_unit_test(test_config_refuses_bad_root_env_and_annotations),
		cmocka_unit_test(test_config_load_refuses_missing_bundle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
