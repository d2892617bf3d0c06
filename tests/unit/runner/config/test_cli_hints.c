/* Unit tests: what a newcomer's first mistakes get: a mistyped long option
 * names the one meant, and a container-only option without an image is
 * refused instead of ignored (options_load, as main calls it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cmdtable.h"
#include "options.h"

/* options_load with an environment that has no HOME, CTRUN_CONFIG or
 * CTRUN_* (the machine's /etc/ctrun/ctrun.ini is optional and absent in
 * the test environment; a present one sets no image there either). */
static int load(char **argv, struct options *o, struct err *e)
{
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	options_init(o);
	return options_load(o, commands, argc, argv, envp, e);
}

static void expect_error(char **argv, const char *text)
{
	struct err e = { 0 };
	struct options o;

	assert_int_equal(load(argv, &o, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (strstr(e.msg, text) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", e.msg, text);
	options_free(&o);
}

static void test_mistyped_option_gets_the_close_one(void **state)
{
	(void)state;
	expect_error((char *[]){ "ctrun", "--nproc-pernode", "2", "true", NULL },
		     "unknown option '--nproc-pernode' (did you mean --nproc-per-node?)");
	expect_error((char *[]){ "ctrun", "--imgae=x.sqsh", "true", NULL },
		     "(did you mean --image?)");
	expect_error((char *[]){ "ctrun", "--max-retsarts", "1", "true", NULL },
		     "(did you mean --max-restarts?)");
}

static void test_far_option_gets_no_guess(void **state)
{
	(void)state;
	expect_error((char *[]){ "ctrun", "--zzzzzzz", "true", NULL },
		     "unknown option '--zzzzzzz' (see ctrun --help)");
	/* Short names need a closer match: --nz is not --nv's typo by rule. */
	expect_error((char *[]){ "ctrun", "--xy", "true", NULL }, "(see ctrun --help)");
}

static void test_container_options_need_an_image(void **state)
{
	(void)state;
	expect_error((char *[]){ "ctrun", "--mount", "/data", "true", NULL },
		     "--mount needs --image");
	expect_error((char *[]){ "ctrun", "--workdir", "/w", "env", NULL },
		     "--workdir needs --image");
	expect_error((char *[]){ "ctrun", "--entrypoint", "check", NULL },
		     "--entrypoint needs --image");
}

static void test_container_options_with_an_image_pass(void **state)
{
	char *argv[] = { "ctrun", "--mount", "/data", "--image", "x.sqsh", "true", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	assert_int_equal(load(argv, &o, &e), 0);
	assert_string_equal(o.image, "x.sqsh");
	assert_int_equal(o.mounts.n, 1);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mistyped_option_gets_the_close_one),
		cmocka_unit_test(test_far_option_gets_no_guess),
		cmocka_unit_test(test_container_options_need_an_image),
		cmocka_unit_test(test_container_options_with_an_image_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
