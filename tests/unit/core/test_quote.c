/* Unit tests: what --dry-run prints reads back, through a real POSIX
 * shell, as exactly the words it quoted (quote.h); a bad character is
 * named so that a person can see it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "quote.h"

/* Quotes argv into a command line, has /bin/sh print each word it reads
 * NUL-terminated, and compares. */
static void round_trip(char *const *argv)
{
	char *line = NULL, cmd[8192], got[8192], path[] = "/tmp/ctrun-test-quote.XXXXXX";
	size_t len = 0, n;
	FILE *f = open_memstream(&line, &len), *p;
	size_t off = 0;
	int fd;

	assert_non_null(f);
	fputs("printf '%s\\0' ", f);
	shell_quote_argv(f, argv);
	fclose(f);
	/* The line itself goes to sh through a file, never through another quoting. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(line, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "sh %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(got, 1, sizeof(got), p);
	assert_int_equal(pclose(p), 0);
	for (size_t i = 0; argv[i] != NULL; i++) {
		size_t w = strlen(argv[i]);

		if (off + w + 1 > n || memcmp(got + off, argv[i], w + 1) != 0)
			fail_msg("word %zu (\"%s\") did not read back from: %s", i, argv[i], line);
		off += w + 1;
	}
	assert_int_equal(off, n);
	remove(path);
	free(line);
}

static void test_hostile_words_read_back_byte_for_byte(void **state)
{
	char *argv[] = { "plain", "two words", "it's", "\"dq\"", "$HOME", "`id`", "$(id)", "a\\b",
			 "tab\there", "new\nline", "*", "~", "", "-n", "semi;colon", "&", "|", "#x",
			 "=", "\xc3\xa9\xff", NULL };

	(void)state;
	round_trip(argv);
}

static void test_safe_words_stay_bare(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	shell_quote(f, "train.py");
	fputc(' ', f);
	shell_quote(f, "--lr=0.1,2@x%y");
	fputc(' ', f);
	shell_quote(f, "");
	fclose(f);
	assert_string_equal(buf, "train.py --lr=0.1,2@x%y ''");
	free(buf);
}

static void test_char_name(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(char_name('x', buf, sizeof(buf)), "character 'x'");
	assert_string_equal(char_name('\n', buf, sizeof(buf)), "character 0x0a");
	assert_string_equal(char_name('\'', buf, sizeof(buf)), "character 0x27");
	assert_string_equal(char_name('\0', buf, sizeof(buf)), "end of input");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_words_read_back_byte_for_byte),
		cmocka_unit_test(test_safe_words_stay_bare),
		cmocka_unit_test(test_char_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
