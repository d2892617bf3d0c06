/* Unit tests: the image's working directory read back from its /etc/rc
 * (imagerc.h), as enroot's import writes the line (enroot's src/docker.sh:
 * `cd "${workdir:-/}" && unset OLDPWD || exit 1`) and as ctrun's unpack
 * does (tests/unit/images/test_imgconfig.c checks ctrun's writer against
 * this reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "imagerc.h"

/* The directory found in text, or "-" for none. */
static const char *found(const char *text)
{
	static char buf[256];

	if (imagerc_workdir(text, strlen(text), buf, sizeof(buf)) == 1)
		return buf;
	assert_string_equal(buf, "");
	return "-";
}

static void test_enroot_imports_rc_gives_its_workdir(void **state)
{
	/* An NGC image's /etc/rc, as enroot 4.1 writes it. */
	const char *rc = "# enroot-provenance: docker://nvcr.io#nvidia/pytorch:24.06-py3\n"
			 "# com.nvidia.build.id 96418707\n\n"
			 "mkdir -p \"/workspace\" 2> /dev/null\n"
			 "cd \"/workspace\" && unset OLDPWD || exit 1\n\n"
			 "if [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n";

	(void)state;
	assert_string_equal(found(rc), "/workspace");
	assert_string_equal(found("cd \"/\" && unset OLDPWD || exit 1\n"), "/");
	assert_string_equal(found("cd \"/my dir\" && unset OLDPWD || exit 1"), "/my dir");
}

static void test_ctruns_quoted_forms(void **state)
{
	(void)state;
	assert_string_equal(found("if [ $# -gt 0 ]; then\n\texec \"$@\"\nelse\n"
				  "\tcd /opt/app && unset OLDPWD || exit 1\n\texec /bin/sh\nfi\n"),
			    "/opt/app");
	assert_string_equal(found("\tcd '/a b' && unset OLDPWD || exit 1\n"), "/a b");
	assert_string_equal(found("\tcd '/it'\\''s' && unset OLDPWD || exit 1\n"), "/it's");
	/* A newline in a quoted directory: the line it starts on counts. */
	assert_string_equal(found("cd '/a\nb' && unset OLDPWD || exit 1\n"), "/a\nb");
}

static void test_the_first_such_line_counts(void **state)
{
	(void)state;
	assert_string_equal(found("cd \"/one\" && unset OLDPWD || exit 1\n"
				  "cd \"/two\" && unset OLDPWD || exit 1\n"), "/one");
	assert_string_equal(found("cd /x\ncd \"/two\" && unset OLDPWD || exit 1\n"), "/two");
}

static void test_anything_else_is_no_workdir(void **state)
{
	(void)state;
	assert_string_equal(found(""), "-");
	assert_string_equal(found("exec \"$@\"\n"), "-");
	/* Not the whole line, or more after it. */
	assert_string_equal(found("cd \"/w\" && unset OLDPWD\n"), "-");
	assert_string_equal(found("cd \"/w\" && unset OLDPWD || exit 1; rm -rf /\n"), "-");
	assert_string_equal(found("echo; cd \"/w\" && unset OLDPWD || exit 1\n"), "-");
	/* What the shell would expand or change is no plain directory. */
	assert_string_equal(found("cd \"$HOME\" && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd \"/`id`\" && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd \"/a\\\"b\" && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd $W && unset OLDPWD || exit 1\n"), "-");
	/* Relative, empty, unterminated. */
	assert_string_equal(found("cd \"work\" && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd \"\" && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd \"/w && unset OLDPWD || exit 1\n"), "-");
	assert_string_equal(found("cd '/w && unset OLDPWD || exit 1\n"), "-");
}

static void test_bounded_by_the_text_and_the_buffer(void **state)
{
	const char line[] = "cd \"/workspace\" && unset OLDPWD || exit 1";
	char small[8], nul[] = "cd \"/a\0b\" && unset OLDPWD || exit 1\n";

	(void)state;
	/* Cut anywhere: no line, and nothing read past len. */
	for (size_t n = 0; n < sizeof(line) - 1; n++) {
		char buf[64];

		assert_int_equal(imagerc_workdir(line, n, buf, sizeof(buf)), 0);
	}
	assert_int_equal(imagerc_workdir(line, sizeof(line) - 1, small, sizeof(small)), 0);
	assert_string_equal(small, "");
	assert_int_equal(imagerc_workdir(nul, sizeof(nul) - 1, small, sizeof(small)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enroot_imports_rc_gives_its_workdir),
		cmocka_unit_test(test_ctruns_quoted_forms),
		cmocka_unit_test(test_the_first_such_line_counts),
		cmocka_unit_test(test_anything_else_is_no_workdir),
		cmocka_unit_test(test_bounded_by_the_text_and_the_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
