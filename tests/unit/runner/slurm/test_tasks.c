/* Unit tests: SLURM_TASKS_PER_NODE / SLURM_JOB_CPUS_PER_NODE parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tasks.h"

static void expect_counts(const char *in, const long *want, size_t nwant)
{
	long *counts = NULL;
	size_t n = 0;
	struct err e = { 0 };

	if (tasks_per_node_parse(in, &counts, &n, &e) != 0)
		fail_msg("tasks_per_node_parse(\"%s\") failed: %s", in, e.msg);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		if (counts[i] != want[i])
			fail_msg("\"%s\": count %zu is %ld, want %ld", in, i, counts[i], want[i]);
	free(counts);
}

static void expect_refused(const char *in, const char *msg_part)
{
	long *counts = (long *)1;
	size_t n = 99;
	struct err e = { 0 };

	if (tasks_per_node_parse(in, &counts, &n, &e) != -1)
		fail_msg("tasks_per_node_parse(\"%s\") accepted it (%zu nodes)", in, n);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_null(counts);
	assert_int_equal(n, 0);
	assert_null(strchr(e.msg, '\n'));
	if (strstr(e.msg, msg_part) == NULL)
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", in, e.msg, msg_part);
}

static void test_repeat_expands_to_one_count_per_node(void **state)
{
	const long want[] = { 2, 2, 2, 1 };

	(void)state;
	expect_counts("2(x3),1", want, 4);
}

static void test_single_count(void **state)
{
	const long want[] = { 4 };

	(void)state;
	expect_counts("4", want, 1);
}

static void test_cpus_per_node_style_list(void **state)
{
	/* SLURM_JOB_CPUS_PER_NODE on a job over two fat and one thin node. */
	const long want[] = { 72, 72, 36, 8, 8 };

	(void)state;
	expect_counts("72(x2),36,8(x2)", want, 5);
}

static void test_repeat_of_one_and_leading_zeros(void **state)
{
	const long want[] = { 3, 2, 2 };

	(void)state;
	expect_counts("3(x1),02(x02)", want, 3);
}

static void test_zero_count_allowed(void **state)
{
	/* Syntax allows it; a node without tasks gets no ranks. */
	const long want[] = { 0, 1 };

	(void)state;
	expect_counts("0,1", want, 2);
}

static void test_large_repeat(void **state)
{
	long *counts = NULL;
	size_t n = 0;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(tasks_per_node_parse("1(x65536)", &counts, &n, &e), 0);
	assert_int_equal(n, 65536);
	assert_int_equal(counts[0], 1);
	assert_int_equal(counts[65535], 1);
	free(counts);
}

static void test_limits_accepted(void **state)
{
	long *counts = NULL;
	size_t n = 0;
	struct err e = { 0 };
	char in[64];

	(void)state;
	snprintf(in, sizeof(in), "%ld(x%ld)", TASKS_MAX_PER_NODE, TASKS_MAX_NODES);
	assert_int_equal(tasks_per_node_parse(in, &counts, &n, &e), 0);
	assert_int_equal(n, (size_t)TASKS_MAX_NODES);
	assert_int_equal(counts[n - 1], TASKS_MAX_PER_NODE);
	free(counts);
}

static void test_refuses_zero_repeat(void **state)
{
	(void)state;
	expect_refused("2(x0)", "a repeat count at offset 3 is less than 1");
}

static void test_refuses_missing_count(void **state)
{
	(void)state;
	expect_refused("(x3)", "expected a count at offset 0, found character '('");
	expect_refused("", "expected a count at offset 0, found end of input");
	expect_refused("1,", "expected a count at offset 2, found end of input");
	expect_refused(",1", "expected a count at offset 0, found character ','");
	expect_refused("1,,2", "expected a count at offset 2, found character ','");
}

static void test_refuses_unterminated_repeat(void **state)
{
	(void)state;
	expect_refused("2(x", "expected a repeat count at offset 3, found end of input");
	expect_refused("2(x3", "expected ')' at offset 4, found end of input");
	expect_refused("2(3)", "expected 'x' at offset 2, found character '3'");
	expect_refused("2(", "expected 'x' at offset 2, found end of input");
}

static void test_refuses_negative_and_signed(void **state)
{
	(void)state;
	expect_refused("-1", "expected a count at offset 0, found character '-'");
	expect_refused("+1", "expected a count at offset 0, found character '+'");
	expect_refused("2(x-1)", "expected a repeat count at offset 3, found character '-'");
}

static void test_refuses_overflow(void **state)
{
	(void)state;
	expect_refused("99999999999999999999999", "a count at offset 0 is more than 1048576");
	expect_refused("1048577", "a count at offset 0 is more than 1048576");
	expect_refused("1(x99999999999999999999)", "a repeat count at offset 3 is more than");
	expect_refused("1(x1048576),1", "more than 1048576 nodes");
}

static void test_refuses_trailing_junk(void **state)
{
	(void)state;
	expect_refused("2(x3)4", "expected ',' at offset 5, found character '4'");
	expect_refused("1x", "expected ',' at offset 1, found character 'x'");
	expect_refused("1 ", "expected ',' at offset 1, found character ' '");
	expect_refused(" 1", "expected a count at offset 0, found character ' '");
	expect_refused("1\n", "expected ',' at offset 1, found character 0x0a");
	expect_refused("2(x3) ", "expected ',' at offset 5, found character ' '");
}

static void test_error_message_quotes_input(void **state)
{
	long *counts = NULL;
	size_t n = 0;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(tasks_per_node_parse("2(x", &counts, &n, &e), -1);
	assert_string_equal(e.msg, "per-node counts \"2(x\": expected a repeat count at "
				   "offset 3, found end of input");
	assert_int_equal(tasks_per_node_parse(NULL, &counts, &n, &e), -1);
	assert_null(counts);
}

static void test_error_message_of_long_binary_input_fits(void **state)
{
	/* Found by fuzzing: 40 bytes shown as \xNN overran the buffer. */
	char in[64];

	(void)state;
	memset(in, 0xff, sizeof(in) - 1);
	in[0] = '1';
	in[sizeof(in) - 1] = '\0';
	expect_refused(in, "\\xff\\xff...\": expected ',' at offset 1, found character 0xff");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeat_expands_to_one_count_per_node),
		cmocka_unit_test(test_single_count),
		cmocka_unit_test(test_cpus_per_node_style_list),
		cmocka_unit_test(test_repeat_of_one_and_leading_zeros),
		cmocka_unit_test(test_zero_count_allowed),
		cmocka_unit_test(test_large_repeat),
		cmocka_unit_test(test_limits_accepted),
		cmocka_unit_test(test_refuses_zero_repeat),
		cmocka_unit_test(test_refuses_missing_count),
		cmocka_unit_test(test_refuses_unterminated_repeat),
		cmocka_unit_test(test_refuses_negative_and_signed),
		cmocka_unit_test(test_refuses_overflow),
		cmocka_unit_test(test_refuses_trailing_junk),
		cmocka_unit_test(test_error_message_quotes_input),
		cmocka_unit_test(test_error_message_of_long_binary_input_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
