/* Unit tests: settings from ini files, CTRUN_* variables and the command
 * line, layered in that order, with errors that name file:line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "options.h"

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/ctrun-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static int parse(struct options *o, char **argv, struct err *e)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return options_parse_argv(o, argc, argv, e);
}

static void test_defaults(void **state)
{
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(o.mode, MODE_AUTO);
	assert_null(o.prefix_mode); /* auto: [rankN]: from two workers on */
	assert_int_equal(o.kill_timeout, 3);
	assert_int_equal(o.max_restarts, 0);
	assert_int_equal(o.nnodes, -1);
	options_free(&o);
}

static void test_command_after_options_is_kept_verbatim(void **state)
{
	char *argv[] = { "ctrun", "--nproc-per-node", "2", "train.py", "--epochs", "3", "-v", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(parse(&o, argv, &e), 0);
	assert_string_equal(o.nproc_per_node, "2");
	assert_int_equal(o.command.n, 4);
	assert_string_equal(o.command.v[0], "train.py");
	assert_string_equal(o.command.v[3], "-v"); /* the worker's flag, not ours */
	assert_int_equal(o.verbose, 0);
	options_free(&o);
}

static void test_subcommand_word_and_double_dash(void **state)
{
	char *a1[] = { "ctrun", "env", "--nproc-per-node", "4", NULL };
	char *a2[] = { "ctrun", "--", "env", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(parse(&o, a1, &e), 0);
	assert_int_equal(o.cmd, CMD_ENV);
	assert_string_equal(o.nproc_per_node, "4");
	options_free(&o);
	options_init(&o);
	assert_int_equal(parse(&o, a2, &e), 0);
	assert_int_equal(o.cmd, CMD_RUN);
	assert_string_equal(o.command.v[0], "env");
	options_free(&o);
}

static void test_repeatable_env_and_mount(void **state)
{
	char *argv[] = { "ctrun", "--env", "A=1", "--env", "B=x=y", "--mount", "/a:/b", "true", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(parse(&o, argv, &e), 0);
	assert_int_equal(o.env.n, 2);
	assert_string_equal(o.env.v[1], "B=x=y");
	assert_string_equal(o.mounts.v[0], "/a:/b");
	options_free(&o);
}

static void test_rejects_bad_values_naming_the_flag(void **state)
{
	char *a1[] = { "ctrun", "--master-port", "70000", "true", NULL };
	char *a2[] = { "ctrun", "--env", "NOEQUALS", "true", NULL };
	char *a3[] = { "ctrun", "--mode", "sideways", "true", NULL };
	char *a4[] = { "ctrun", "--bogus", "true", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(parse(&o, a1, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--master-port"));
	options_free(&o);
	options_init(&o);
	assert_int_equal(parse(&o, a2, &e), -1);
	assert_non_null(strstr(e.msg, "KEY=VALUE"));
	options_free(&o);
	options_init(&o);
	assert_int_equal(parse(&o, a3, &e), -1);
	assert_non_null(strstr(e.msg, "sideways"));
	options_free(&o);
	options_init(&o);
	assert_int_equal(parse(&o, a4, &e), -1);
	assert_non_null(strstr(e.msg, "--bogus"));
	options_free(&o);
}

static void test_ini_sets_keys_by_section(void **state)
{
	char *path = write_tmp("; site defaults\n[run]\nmax_restarts = 2\nkill_timeout=7\n"
			       "[output]\nprefix = false\n[container]\nmount = /scratch\nmount = /data:/d:ro\n");
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, path, false, &e), 0);
	assert_int_equal(o.max_restarts, 2);
	assert_int_equal(o.kill_timeout, 7);
	assert_string_equal(o.prefix_mode, "false");
	assert_int_equal(o.mounts.n, 2);
	unlink(path);
	options_free(&o);
}

static void test_prefix_flags_override_the_config(void **state)
{
	char *path = write_tmp("[output]\nprefix = false\n");
	char *on[] = { "ctrun", "--prefix", "x", NULL };
	char *off[] = { "ctrun", "--no-prefix", "x", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, path, false, &e), 0);
	assert_int_equal(parse(&o, on, &e), 0);
	assert_string_equal(o.prefix_mode, "true");
	options_free(&o);
	options_init(&o);
	assert_int_equal(parse(&o, off, &e), 0);
	assert_string_equal(o.prefix_mode, "false");
	options_free(&o);
	unlink(path);
	path = write_tmp("[output]\nprefix = sometimes\n");
	options_init(&o);
	assert_int_equal(options_load_file(&o, path, false, &e), -1);
	assert_non_null(strstr(e.msg, "sometimes"));
	options_free(&o);
	unlink(path);
}

static void test_ini_unknown_key_names_file_and_line(void **state)
{
	char *path = write_tmp("[run]\nmax_restarts = 1\n\nmax_restart = 2\n");
	char want[128];
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, path, false, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	snprintf(want, sizeof(want), "%s:4: unknown key 'max_restart'", path);
	assert_non_null(strstr(e.msg, want));
	unlink(path);
	options_free(&o);
}

/* A bad value names the good ones: the fix is in the message. */
static void test_unknown_value_lists_the_choices(void **state)
{
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_set(&o, "runtime", "docker", "--runtime", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--runtime: unknown value 'docker' (use one of: auto, enroot, "
				   "apptainer, singularity, oci, crun, charliecloud)");
	assert_int_equal(options_set(&o, "mode", "batch", "--mode", &e), -1);
	assert_string_equal(e.msg, "--mode: unknown value 'batch' (use one of: auto, standalone, "
				   "node, task)");
	options_free(&o);
}

static void test_ini_key_in_wrong_section_is_an_error(void **state)
{
	char *path = write_tmp("[output]\nmax_restarts = 1\n");
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, path, false, &e), -1);
	assert_non_null(strstr(e.msg, ":2:"));
	assert_non_null(strstr(e.msg, "[run]"));
	unlink(path);
	options_free(&o);
}

static void test_ini_bad_value_and_syntax_error(void **state)
{
	char *p1 = write_tmp("[run]\n\nmaster_port = http\n");
	char *p1c = strdup(p1);
	char *p2;
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, p1c, false, &e), -1);
	assert_non_null(strstr(e.msg, ":3:"));
	assert_non_null(strstr(e.msg, "http"));
	unlink(p1c);
	free(p1c);
	p2 = write_tmp("[run\nmode = node\n");
	assert_int_equal(options_load_file(&o, p2, false, &e), -1);
	assert_non_null(strstr(e.msg, ":1: syntax error"));
	unlink(p2);
	options_free(&o);
}

static void test_missing_optional_file_is_fine_but_explicit_is_not(void **state)
{
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_file(&o, "/nonexistent/ctrun.ini", true, &e), 0);
	assert_int_equal(options_load_file(&o, "/nonexistent/ctrun.ini", false, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	options_free(&o);
}

static void test_layers_cli_over_env_over_config_file(void **state)
{
	char *path = write_tmp("[run]\nmax_restarts = 1\nkill_timeout = 9\nmode = task\n");
	char conf[128];
	char *envp[] = { conf, "CTRUN_MAX_RESTARTS=2", "CTRUN_KILL_TIMEOUT=", "HOME=/nonexistent", NULL };
	char *argv[] = { "ctrun", "--max-restarts", "3", "true", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	snprintf(conf, sizeof(conf), "CTRUN_CONFIG=%s", path);
	options_init(&o);
	assert_int_equal(options_load(&o, 4, argv, envp, &e), 0);
	assert_int_equal(o.max_restarts, 3); /* CLI beats env beats file */
	assert_int_equal(o.kill_timeout, 9); /* an empty variable does not override */
	assert_int_equal(o.mode, MODE_TASK);
	options_free(&o);

	options_init(&o);
	char *argv2[] = { "ctrun", "true", NULL };
	assert_int_equal(options_load(&o, 2, argv2, envp, &e), 0);
	assert_int_equal(o.max_restarts, 2);
	options_free(&o);
	unlink(path);
}

static void test_env_error_names_the_variable(void **state)
{
	char *envp[] = { "CTRUN_MODE=everything", NULL };
	struct err e = { 0 };
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(options_load_env(&o, envp, &e), -1);
	assert_non_null(strstr(e.msg, "CTRUN_MODE"));
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_command_after_options_is_kept_verbatim),
		cmocka_unit_test(test_subcommand_word_and_double_dash),
		cmocka_unit_test(test_repeatable_env_and_mount),
		cmocka_unit_test(test_rejects_bad_values_naming_the_flag),
		cmocka_unit_test(test_ini_sets_keys_by_section),
		cmocka_unit_test(test_prefix_flags_override_the_config),
		cmocka_unit_test(test_ini_unknown_key_names_file_and_line),
		cmocka_unit_test(test_ini_key_in_wrong_section_is_an_error),
		cmocka_unit_test(test_unknown_value_lists_the_choices),
		cmocka_unit_test(test_ini_bad_value_and_syntax_error),
		cmocka_unit_test(test_missing_optional_file_is_fine_but_explicit_is_not),
		cmocka_unit_test(test_layers_cli_over_env_over_config_file),
		cmocka_unit_test(test_env_error_names_the_variable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
