/* Unit tests: core's string vectors (strv.h): joining, which the drivers'
 * GPU lists use. */
#include "ctrtest.h"

#include "strv.h"

static void test_join_fits_or_fails(void **state)
{
	struct strv v = { 0 };
	char buf[16];

	(void)state;
	assert_int_equal(strv_join(&v, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(strv_push(&v, "0"), 0);
	assert_int_equal(strv_push(&v, "12"), 0);
	assert_int_equal(strv_join(&v, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0,12");
	assert_int_equal(strv_push(&v, "345"), 0);
	assert_int_equal(strv_join(&v, buf, 8), -1); /* "0,12,345" needs 9 bytes */
	assert_int_equal(strv_join(&v, buf, 9), 0);
	assert_string_equal(buf, "0,12,345");
	strv_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_fits_or_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
