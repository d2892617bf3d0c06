/* Unit tests: core's strict parsers (util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "util.h"

static void test_parse_size(void **state)
{
	unsigned long long v;

	(void)state;
	assert_int_equal(parse_size("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_size("50G", &v), 0);
	assert_int_equal(v, 50ULL << 30);
	assert_int_equal(parse_size("1.5k", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(parse_size("2TiB", &v), 0);
	assert_int_equal(v, 2ULL << 40);
	assert_int_equal(parse_size("", &v), -1);
	assert_int_equal(parse_size("-1G", &v), -1);
	assert_int_equal(parse_size("10X", &v), -1);
	assert_int_equal(parse_size("10GG", &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
