/* Unit tests: an error is one line, whatever it quotes (err.h): a path or
 * a value from an image may hold newlines, tabs and other control bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"

static void test_control_bytes_are_shown_escaped(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(err_set(&e, EXIT_USAGE, "--mount '%s': bad", "a\nb\tc\rd\x7f"), -1);
	assert_string_equal(e.msg, "--mount 'a\\nb\\tc\\x0dd\\x7f': bad");
	assert_int_equal(e.code, EXIT_USAGE);
	errno = ENOENT;
	err_sys(&e, EXIT_CTRUN, "open %s", "x\ny");
	assert_string_equal(e.msg, "open x\\ny: No such file or directory");
	err_wrap(&e, "image %s", "i\nj");
	assert_string_equal(e.msg, "image i\\nj: open x\\ny: No such file or directory");
	assert_null(strchr(e.msg, '\n'));
}

static void test_non_ascii_stays_as_it_is(void **state)
{
	struct err e = { 0 };

	(void)state;
	err_set(&e, 1, "caf\xc3\xa9");
	assert_string_equal(e.msg, "caf\xc3\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_bytes_are_shown_escaped),
		cmocka_unit_test(test_non_ascii_stays_as_it_is),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
