/* Unit tests: an IMEX channel request, NVIDIA_IMEX_CHANNELS's syntax, as
 * [gpu] imex_channels and ctrun-hook read it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "imex.h"

static void test_imex_channel_requests(void **state)
{
	struct imex_req x;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(imex_parse(NULL, "S", &x, &e), 0);
	assert_false(x.all);
	assert_int_equal(x.n, 0);
	assert_int_equal(imex_parse("none", "S", &x, &e), 0);
	assert_int_equal(x.n, 0);
	assert_int_equal(imex_parse("all", "S", &x, &e), 0);
	assert_true(x.all);
	assert_int_equal(imex_parse("0,channel7,1048575", "S", &x, &e), 0);
	assert_int_equal(x.n, 3);
	assert_int_equal(x.ids[1], 7);
	assert_int_equal(x.ids[2], 1048575);
	assert_int_equal(imex_parse("1048576", "[gpu] imex_channels", &x, &e), -1);
	assert_non_null(strstr(e.msg, "[gpu] imex_channels='1048576': '1048576' is not an IMEX "
				      "channel"));
	assert_int_equal(imex_parse("0,", "S", &x, &e), -1);
	assert_int_equal(imex_parse("-1", "S", &x, &e), -1);
	assert_int_equal(imex_parse("channel", "S", &x, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_imex_channel_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
