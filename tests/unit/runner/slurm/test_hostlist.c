/* Unit tests: the builtin Slurm hostlist expansion (hostlist.c): what it
 * accepts, in Slurm's order and padding, and what it refuses, with a
 * message naming the input and the offset.  The comparison with libslurm
 * is in test_hostlist_libslurm.c. */
#define CTRTEST_HOSTLIST
#include "ctrtest.h"

/* ---- what the builtin accepts --------------------------------------- */

static void test_single_hosts_pass_through(void **state)
{
	const struct accept_case t[] = {
		{ "n1", "n1" },           { "login", "login" },     { "n007", "n007" },
		{ "a-b.c_d", "a-b.c_d" }, { "123", "123" },         { "x\"y\\z", "x\"y\\z" },
		{ "a99999999999999999999b", "a99999999999999999999b" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_simple_range(void **state)
{
	const struct accept_case t[] = {
		{ "n[1-3]", "n1,n2,n3" },
		{ "n[0-0]", "n0" },
		{ "n[7]", "n7" },
		{ "node-[9-11]", "node-9,node-10,node-11" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_zero_padding_kept(void **state)
{
	const struct accept_case t[] = {
		{ "n[001-003]", "n001,n002,n003" },
		{ "n[08-11]", "n08,n09,n10,n11" },
		{ "n[098-101]", "n098,n099,n100,n101" },
		{ "n[00]", "n00" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_padding_width_is_lower_bound_width(void **state)
{
	/* Slurm pads every number to the width of the range's lower bound. */
	const struct accept_case t[] = {
		{ "n[1-010]", "n1,n2,n3,n4,n5,n6,n7,n8,n9,n10" },
		{ "n[01-1]", "n01" },
		{ "n[007-9]", "n007,n008,n009" },
		{ "n[9-0011]", "n9,n10,n11" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_commas_inside_brackets(void **state)
{
	const struct accept_case t[] = {
		{ "n[1,3,5-7]", "n1,n3,n5,n6,n7" },
		{ "n[5,1-2]", "n5,n1,n2" },
		{ "n[1,02,003]", "n1,n02,n003" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_multiple_bracket_groups(void **state)
{
	const struct accept_case t[] = {
		{ "rack[1-2]n[01-02]", "rack1n01,rack1n02,rack2n01,rack2n02" },
		{ "r[1,3]-n[1-2]", "r1-n1,r1-n2,r3-n1,r3-n2" },
		{ "[1-2][3-4]", "13,14,23,24" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_three_bracket_groups_follow_slurm_order(void **state)
{
	/* libslurm peels brackets off the prefix from the right: the last
	 * varies fastest, then the first, then the middle one. */
	(void)state;
	expect_hosts("a[1-2]b[1-2]c[1-2]", "a1b1c1,a1b1c2,a2b1c1,a2b1c2,a1b2c1,a1b2c2,a2b2c1,a2b2c2");
	expect_hosts("a[1-2]b[1]c[1]d[1-2]", "a1b1c1d1,a1b1c1d2,a2b1c1d1,a2b1c1d2");
}

static void test_brackets_without_prefix(void **state)
{
	(void)state;
	expect_hosts("[1-2]", "1,2");
	expect_hosts("[09-10]", "09,10");
}

static void test_duplicates_kept_in_order(void **state)
{
	const struct accept_case t[] = {
		{ "n[1-3],n[2-4]", "n1,n2,n3,n2,n3,n4" },
		{ "n1,n1", "n1,n1" },
		{ "n[3],n[1-3]", "n3,n1,n2,n3" },
		{ "n[1,1]", "n1,n1" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_blanks_and_commas_separate_hosts(void **state)
{
	const struct accept_case t[] = {
		{ "a b\tc,d", "a,b,c,d" },
		{ " , a ,, b , ", "a,b" },
		{ "n[1-2]  m[3]", "n1,n2,m3" },
	};

	(void)state;
	EXPECT_HOSTS(t);
}

static void test_empty_list_gives_no_hosts(void **state)
{
	/* As libslurm: no error; callers needing a node check out.n. */
	(void)state;
	expect_hosts("", "");
	expect_hosts(" \t ", "");
	expect_hosts(",,,", "");
}

static void test_largest_range_accepted(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hostlist_expand("n[0-65535]", &out, &e), 0);
	assert_int_equal(out.n, 65536);
	assert_string_equal(out.v[65535], "n65535");
	strv_free(&out);
}

static void test_largest_number_accepted(void **state)
{
	char in[64], want[64];

	(void)state;
	snprintf(in, sizeof(in), "n[%lu]", ULONG_MAX - 1);
	snprintf(want, sizeof(want), "n%lu", ULONG_MAX - 1);
	expect_hosts(in, want);
}

static void test_expands_65536_hosts_fast(void **state)
{
	double best = 1e9;

	(void)state;
	for (int run = 0; run < 5; run++) {
		struct strv out = { 0 };
		struct err e = { 0 };
		struct timespec t0, t1;
		double ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(hostlist_expand("n[00001-65536]", &out, &e), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		if (ms < best)
			best = ms;
		assert_int_equal(out.n, 65536);
		assert_string_equal(out.v[0], "n00001");
		assert_string_equal(out.v[1], "n00002");
		assert_string_equal(out.v[65535], "n65536");
		assert_null(out.v[65536]);
		strv_free(&out);
	}
	print_message("hostlist: n[00001-65536] expanded in %.2f ms (best of 5)\n", best);
	/* ~3 ms here; the bound only catches an accidental quadratic. */
	assert_true(best < 200.0);
}

/* ---- what the builtin refuses --------------------------------------- */

static void test_refuses_unbalanced_bracket(void **state)
{
	const struct refuse_case t[] = {
		{ "n[1-", "'[' at offset 1 has no matching ']'" },
		{ "n[1-2,3", "'[' at offset 1 has no matching ']'" },
		{ "[", "'[' at offset 0 has no matching ']'" },
		{ "a,b[1", "'[' at offset 3 has no matching ']'" },
	};

	(void)state;
	EXPECT_REFUSED(t);
}

static void test_refuses_stray_close_bracket(void **state)
{
	const struct refuse_case t[] = {
		{ "a]b", "unexpected ']' at offset 1" },
		{ "n1-]", "unexpected ']' at offset 3" },
		{ "n[1-2]]", "unexpected ']' at offset 6" },
	};

	(void)state;
	EXPECT_REFUSED(t);
}

static void test_refuses_nested_brackets(void **state)
{
	const struct refuse_case t[] = {
		{ "n[[1-2]]", "nested '[' at offset 2" },
		{ "a[1[2]", "nested '[' at offset 3" },
	};

	(void)state;
	EXPECT_REFUSED(t);
}

/* Slurm 23.11 and later: text after the last bracket ends every name
 * (22.05 refused it; the builtin follows the newest Slurm). */
static void test_suffix_after_the_last_bracket_ends_every_name(void **state)
{
	const struct accept_case t[] = {
		{ "n[1-2]-ib", "n1-ib,n2-ib" },
		{ "n[1-2]n3", "n1n3,n2n3" },
		{ "n[01-02].cluster,x", "n01.cluster,n02.cluster,x" },
		{ "a[1]b[2]c", "a1b2c" },
		{ "rack[1-2]n[1-2]-ib", "rack1n1-ib,rack1n2-ib,rack2n1-ib,rack2n2-ib" },
	};

	(void)state;
	EXPECT_HOSTS(t);
	expect_refused("n[1-2]-i]b", "unexpected ']'");
}

static void test_refuses_empty_range(void **state)
{
	const struct refuse_case t[] = {
		{ "n[]", "empty range at offset 2" },   { "n[1,,2]", "empty range at offset 4" },
		{ "n[,1]", "empty range at offset 2" }, { "n[1,]", "empty range at offset 4" },
		{ "[]", "empty range at offset 1" },
	};

	(void)state;
	EXPECT_REFUSED(t);
}

static void test_refuses_descending_range(void **state)
{
	(void)state;
	expect_refused("n[3-1]", "descending range 3-1 at offset 2");
	expect_refused("n[10-09]", "descending range 10-9 at offset 2");
}

static void test_refuses_non_numeric_range(void **state)
{
	const struct refuse_case t[] = {
		{ "n[a-b]", "character 'a' in range at offset 2" },
		{ "n[1x2]", "character 'x' in range at offset 3" },
		{ "n[ 1]", "character ' ' in range at offset 2" },
		{ "n[1, 3]", "character ' ' in range at offset 4" },
		{ "n[+1]", "character '+' in range at offset 2" },
		{ "n[1a-3]", "character 'a' in range at offset 3" },
		{ "n[1-2-3]", "character '-' in range at offset 5" },
		{ "n[-1]", "character '-' in range at offset 2" },
		{ "n[1--2]", "character '-' in range at offset 4" },
		{ "n[1-x]", "character 'x' in range at offset 4" },
	};

	(void)state;
	EXPECT_REFUSED(t);
}

static void test_refuses_missing_upper_bound(void **state)
{
	/* libslurm reads n[1-] as n1. */
	(void)state;
	expect_refused("n[1-]", "range at offset 2 has no upper bound");
	expect_refused("n[1-,3]", "range at offset 2 has no upper bound");
}

static void test_refuses_range_over_max_range(void **state)
{
	(void)state;
	expect_refused("n[0-65536]", "range 0-65536 at offset 2 has more than 65536 hosts");
	expect_refused("n[1-99999]", "more than 65536 hosts");
}

static void test_refuses_prefix_bracket_over_max_prefix_cnt(void **state)
{
	(void)state;
	expect_refused("a[0-40000,0-40000]b[1]", "bracket at offset 1 expands to more than 65536");
}

static void test_refuses_too_large_number(void **state)
{
	char in[64];

	(void)state;
	snprintf(in, sizeof(in), "n[%lu]", ULONG_MAX);
	expect_refused(in, "number at offset 2 is too large");
	expect_refused("n[99999999999999999999]", "number at offset 2 is too large");
	expect_refused("n[1-99999999999999999999]", "number at offset 4 is too large");
	expect_refused("n99999999999999999999", "number at offset 1 is too large");
}

static void test_refuses_control_characters(void **state)
{
	(void)state;
	expect_refused("a\nb", "control character 0x0a at offset 1");
	expect_refused("n[1-2]\r", "control character 0x0d at offset 6");
}

static void test_refuses_more_than_max_hosts(void **state)
{
	(void)state;
	/* 1024 x 1025 > 2^20; refused before anything is allocated. */
	expect_refused("a[0-1023]b[0-1024]", "expands to more than 1048576 hosts");
	expect_refused("a[0-65535]b[0-65535]", "expands to more than 1048576 hosts");
}

static void test_refuses_too_many_ranges_in_one_bracket(void **state)
{
	/* 262145 ranges: libslurm 22.05 exit()s the process on this. */
	size_t n = 262145, len = 0;
	char *s = malloc(2 * n + 8);

	(void)state;
	assert_non_null(s);
	len += (size_t)sprintf(s, "n[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "%s1", i ? "," : "");
	strcpy(s + len, "]");
	expect_refused(s, "bracket at offset 1 has more than 262144 ranges");
	free(s);
}

static void test_refuses_null_input(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hostlist_expand(NULL, &out, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_int_equal(out.n, 0);
}

static void test_error_message_quotes_input_and_offset(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };
	char *longer = malloc(200);

	(void)state;
	assert_int_equal(hostlist_expand("n[1-", &out, &e), -1);
	assert_string_equal(e.msg, "hostlist \"n[1-\": '[' at offset 1 has no matching ']'");

	/* A long list is cut in the message; the offset still says where. */
	assert_non_null(longer);
	memset(longer, 'a', 150);
	strcpy(longer + 150, "]");
	assert_int_equal(hostlist_expand(longer, &out, &e), -1);
	assert_non_null(strstr(e.msg, "aaaa...\": unexpected ']' at offset 150"));

	/* Unprintable bytes are shown as \xNN, still within the message. */
	memset(longer, 0xff, 150);
	strcpy(longer + 150, "]");
	assert_int_equal(hostlist_expand(longer, &out, &e), -1);
	assert_non_null(strstr(e.msg, "\\xff...\": unexpected ']' at offset 150"));
	free(longer);
}

static void test_error_after_good_names_leaves_output_empty(void **state)
{
	(void)state;
	/* n[1-65535] is expanded before the bad name is reached. */
	expect_refused("n[1-65535],m[1-2x]", "character 'x' in range at offset 16");
	expect_refused("a,b,c,a]", "unexpected ']'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_hosts_pass_through),
		cmocka_unit_test(test_simple_range),
		cmocka_unit_test(test_zero_padding_kept),
		cmocka_unit_test(test_padding_width_is_lower_bound_width),
		cmocka_unit_test(test_commas_inside_brackets),
		cmocka_unit_test(test_multiple_bracket_groups),
		cmocka_unit_test(test_three_bracket_groups_follow_slurm_order),
		cmocka_unit_test(test_brackets_without_prefix),
		cmocka_unit_test(test_duplicates_kept_in_order),
		cmocka_unit_test(test_blanks_and_commas_separate_hosts),
		cmocka_unit_test(test_empty_list_gives_no_hosts),
		cmocka_unit_test(test_largest_range_accepted),
		cmocka_unit_test(test_largest_number_accepted),
		cmocka_unit_test(test_expands_65536_hosts_fast),
		cmocka_unit_test(test_refuses_unbalanced_bracket),
		cmocka_unit_test(test_refuses_stray_close_bracket),
		cmocka_unit_test(test_refuses_nested_brackets),
		cmocka_unit_test(test_suffix_after_the_last_bracket_ends_every_name),
		cmocka_unit_test(test_refuses_empty_range),
		cmocka_unit_test(test_refuses_descending_range),
		cmocka_unit_test(test_refuses_non_numeric_range),
		cmocka_unit_test(test_refuses_missing_upper_bound),
		cmocka_unit_test(test_refuses_range_over_max_range),
		cmocka_unit_test(test_refuses_prefix_bracket_over_max_prefix_cnt),
		cmocka_unit_test(test_refuses_too_large_number),
		cmocka_unit_test(test_refuses_control_characters),
		cmocka_unit_test(test_refuses_more_than_max_hosts),
		cmocka_unit_test(test_refuses_too_many_ranges_in_one_bracket),
		cmocka_unit_test(test_refuses_null_input),
		cmocka_unit_test(test_error_message_quotes_input_and_offset),
		cmocka_unit_test(test_error_after_good_names_leaves_output_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
