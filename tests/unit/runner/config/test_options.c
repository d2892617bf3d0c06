/* Unit tests: settings from ini files, CTRUN_* variables and the command
 * line, layered in that order, with errors that name file:line. */
#include "ctrtest.h"
#include "cmdtable.h"
#include "options.h"

/* Each test: options as options_init leaves them, a scratch directory for
 * its ini files (removed with them, passed or not). */
struct fx {
	struct options o;
	struct tmpdir *td;
	int files;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL || tmpdir_setup((void **)&f->td) != 0)
		return -1;
	options_init(&f->o);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	options_free(&f->o);
	tmpdir_teardown((void **)&f->td);
	free(f);
	return 0;
}

/* Options as new, for the next case of the same test. */
static void fresh(struct fx *f)
{
	options_free(&f->o);
	options_init(&f->o);
}

/* An ini file with text in the test's directory: its path. */
static const char *write_tmp(struct fx *f, const char *text)
{
	char name[32];
	const char *path;
	FILE *fp;

	snprintf(name, sizeof(name), "%d.ini", f->files++);
	path = tmpdir_path(f->td, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	return path;
}

static int parse(struct options *o, char **argv, struct err *e)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return options_parse_argv(o, commands, argc, argv, e);
}

static void test_defaults(void **state)
{
	struct fx *f = *state;

	assert_int_equal(f->o.mode, MODE_AUTO);
	assert_null(f->o.prefix_mode); /* auto: [rankN]: from two workers on */
	assert_int_equal(f->o.kill_timeout, 3);
	assert_int_equal(f->o.max_restarts, 0);
	assert_int_equal(f->o.nnodes, -1);
}

static void test_command_after_options_is_kept_verbatim(void **state)
{
	struct fx *f = *state;
	char *argv[] = { "ctrun", "--nproc-per-node", "2", "train.py", "--epochs", "3", "-v", NULL };
	struct err e = { 0 };

	assert_int_equal(parse(&f->o, argv, &e), 0);
	assert_string_equal(f->o.nproc_per_node, "2");
	assert_int_equal(f->o.command.n, 4);
	assert_string_equal(f->o.command.v[0], "train.py");
	assert_string_equal(f->o.command.v[3], "-v"); /* the worker's flag, not ours */
	assert_int_equal(f->o.verbose, 0);
}

static void test_subcommand_word_and_double_dash(void **state)
{
	struct fx *f = *state;
	char *a1[] = { "ctrun", "env", "--nproc-per-node", "4", NULL };
	char *a2[] = { "ctrun", "--", "env", NULL };
	struct err e = { 0 };

	assert_int_equal(parse(&f->o, a1, &e), 0);
	assert_ptr_equal(f->o.cmd, &commands[1]);
	assert_true(options_cmd_is(&f->o, "env"));
	assert_string_equal(f->o.nproc_per_node, "4");
	fresh(f);
	assert_int_equal(parse(&f->o, a2, &e), 0);
	assert_ptr_equal(f->o.cmd, &commands[0]);
	assert_true(options_cmd_is(&f->o, "run"));
	assert_string_equal(f->o.command.v[0], "env");
}

/* A command with its own flags gets every word after it, ctrun's flags
 * included (bench's -b is not ctrun's); ctrun's go before the word. */
static void test_own_flags_command_keeps_its_words(void **state)
{
	struct fx *f = *state;
	char *argv[] = { "ctrun", "-v", "bench", "-b", "1M", "--nproc-per-node", "4", NULL };
	struct err e = { 0 };

	assert_int_equal(parse(&f->o, argv, &e), 0);
	assert_ptr_equal(f->o.cmd, &commands[4]);
	assert_int_equal(f->o.verbose, 1);
	assert_null(f->o.nproc_per_node);
	assert_int_equal(f->o.command.n, 4);
	assert_string_equal(f->o.command.v[0], "-b");
	assert_string_equal(f->o.command.v[2], "--nproc-per-node");
}

static void test_repeatable_env_and_mount(void **state)
{
	struct fx *f = *state;
	char *argv[] = { "ctrun", "--env", "A=1", "--env", "B=x=y", "--mount", "/a:/b", "true", NULL };
	struct err e = { 0 };

	assert_int_equal(parse(&f->o, argv, &e), 0);
	assert_int_equal(f->o.env.n, 2);
	assert_string_equal(f->o.env.v[1], "B=x=y");
	assert_string_equal(f->o.mounts.v[0], "/a:/b");
}

static void test_rejects_bad_values_naming_the_flag(void **state)
{
	struct fx *f = *state;
	char *a1[] = { "ctrun", "--master-port", "70000", "true", NULL };
	char *a2[] = { "ctrun", "--env", "=NOKEY", "true", NULL };
	char *a3[] = { "ctrun", "--mode", "sideways", "true", NULL };
	char *a4[] = { "ctrun", "--bogus", "true", NULL };
	struct err e = { 0 };

	assert_int_equal(parse(&f->o, a1, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--master-port"));
	fresh(f);
	assert_int_equal(parse(&f->o, a2, &e), -1);
	assert_non_null(strstr(e.msg, "has no variable name"));
	fresh(f);
	assert_int_equal(parse(&f->o, a3, &e), -1);
	assert_non_null(strstr(e.msg, "sideways"));
	fresh(f);
	assert_int_equal(parse(&f->o, a4, &e), -1);
	assert_non_null(strstr(e.msg, "--bogus"));
}

static void test_ini_sets_keys_by_section(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "; site defaults\n[run]\nmax_restarts = 2\nkill_timeout=7\n"
			       "[output]\nprefix = false\n[container]\nmount = /scratch\nmount = /data:/d:ro\n");
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, path, false, &e), 0);
	assert_int_equal(f->o.max_restarts, 2);
	assert_int_equal(f->o.kill_timeout, 7);
	assert_string_equal(f->o.prefix_mode, "false");
	assert_int_equal(f->o.mounts.n, 2);
}

static void test_prefix_flags_override_the_config(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "[output]\nprefix = false\n");
	char *on[] = { "ctrun", "--prefix", "x", NULL };
	char *off[] = { "ctrun", "--no-prefix", "x", NULL };
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, path, false, &e), 0);
	assert_int_equal(parse(&f->o, on, &e), 0);
	assert_string_equal(f->o.prefix_mode, "true");
	fresh(f);
	assert_int_equal(parse(&f->o, off, &e), 0);
	assert_string_equal(f->o.prefix_mode, "false");
	path = write_tmp(f, "[output]\nprefix = sometimes\n");
	fresh(f);
	assert_int_equal(options_load_file(&f->o, path, false, &e), -1);
	assert_non_null(strstr(e.msg, "sometimes"));
}

static void test_ini_unknown_key_names_file_and_line(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "[run]\nmax_restarts = 1\n\nmax_restart = 2\n");
	char want[128];
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, path, false, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	snprintf(want, sizeof(want), "%s:4: unknown key 'max_restart'", path);
	assert_non_null(strstr(e.msg, want));
}

/* A bad value names the good ones: the fix is in the message. */
static void test_unknown_value_lists_the_choices(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };

	assert_int_equal(options_set(&f->o, "runtime", "docker", "--runtime", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--runtime: unknown value 'docker' (use one of: auto, enroot, "
				   "apptainer, singularity, oci, crun, charliecloud)");
	assert_int_equal(options_set(&f->o, "mode", "batch", "--mode", &e), -1);
	assert_string_equal(e.msg, "--mode: unknown value 'batch' (use one of: auto, standalone, "
				   "node, task)");
}

static void test_ini_key_in_wrong_section_is_an_error(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "[output]\nmax_restarts = 1\n");
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, path, false, &e), -1);
	assert_non_null(strstr(e.msg, ":2:"));
	assert_non_null(strstr(e.msg, "[run]"));
}

static void test_ini_bad_value_and_syntax_error(void **state)
{
	struct fx *f = *state;
	const char *p1 = write_tmp(f, "[run]\n\nmaster_port = http\n");
	char *p1c = strdup(p1);
	const char *p2;
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, p1c, false, &e), -1);
	assert_non_null(strstr(e.msg, ":3:"));
	assert_non_null(strstr(e.msg, "http"));
	free(p1c);
	p2 = write_tmp(f, "[run\nmode = node\n");
	assert_int_equal(options_load_file(&f->o, p2, false, &e), -1);
	assert_non_null(strstr(e.msg, ":1: syntax error"));
}

static void test_missing_optional_file_is_fine_but_explicit_is_not(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };

	assert_int_equal(options_load_file(&f->o, "/nonexistent/ctrun.ini", true, &e), 0);
	assert_int_equal(options_load_file(&f->o, "/nonexistent/ctrun.ini", false, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

static void test_layers_cli_over_env_over_config_file(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "[run]\nmax_restarts = 1\nkill_timeout = 9\nmode = task\n");
	char conf[128];
	char *envp[] = { conf, "CTRUN_MAX_RESTARTS=2", "CTRUN_KILL_TIMEOUT=", "HOME=/nonexistent", NULL };
	char *argv[] = { "ctrun", "--max-restarts", "3", "true", NULL };
	struct err e = { 0 };

	snprintf(conf, sizeof(conf), "CTRUN_CONFIG=%s", path);
	assert_int_equal(options_load(&f->o, commands, 4, argv, envp, &e), 0);
	assert_int_equal(f->o.max_restarts, 3); /* CLI beats env beats file */
	assert_int_equal(f->o.kill_timeout, 9); /* an empty variable does not override */
	assert_int_equal(f->o.mode, MODE_TASK);
	fresh(f);
	char *argv2[] = { "ctrun", "true", NULL };
	assert_int_equal(options_load(&f->o, commands, 2, argv2, envp, &e), 0);
	assert_int_equal(f->o.max_restarts, 2);
}

static void test_env_error_names_the_variable(void **state)
{
	struct fx *f = *state;
	char *envp[] = { "CTRUN_MODE=everything", NULL };
	struct err e = { 0 };

	assert_int_equal(options_load_env(&f->o, envp, &e), -1);
	assert_non_null(strstr(e.msg, "CTRUN_MODE"));
}

/* A flag turns its setting on, or to the boolean after '=': what a file
 * or a CTRUN_* variable made true, the command line makes false again
 * (the SPANK plugin's --container-readonly over a site's writable). */
static void test_a_flag_takes_a_boolean_over_the_config(void **state)
{
	struct fx *f = *state;
	const char *path = write_tmp(f, "[container]\nwritable = true\nroot = true\n"
				     "no_home = true\nentrypoint = true\n");
	char conf[128];
	char *envp[] = { conf, "HOME=/nonexistent", NULL };
	char *argv[] = { "ctrun", "--image", "/i", "--writable=false", "--root=false",
			 "--no-home=0", "--entrypoint=false", "true", NULL };
	char *argv2[] = { "ctrun", "--image", "/i", "--writable", "--root=yes", "true", NULL };
	char *bad[] = { "ctrun", "--writable=maybe", "true", NULL };
	char *arg[] = { "ctrun", "--writable", "false", NULL };
	struct err e = { 0 };

	snprintf(conf, sizeof(conf), "CTRUN_CONFIG=%s", path);
	assert_int_equal(options_load(&f->o, commands, 8, argv, envp, &e), 0);
	assert_false(f->o.writable);
	assert_false(f->o.root);
	assert_false(f->o.no_home);
	assert_false(f->o.entrypoint);
	fresh(f);
	assert_int_equal(options_load(&f->o, commands, 6, argv2, envp, &e), 0);
	assert_true(f->o.writable);
	assert_true(f->o.root);
	assert_true(f->o.no_home);
	fresh(f);
	assert_int_equal(parse(&f->o, bad, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--writable: 'maybe' is not a boolean"));
	/* Only after '=': a word after the flag is the command, as before. */
	fresh(f);
	assert_int_equal(parse(&f->o, arg, &e), 0);
	assert_true(f->o.writable);
	assert_string_equal(f->o.command.v[0], "false");
}

/* --nnodes N or MIN:MAX (torchrun's), --spares, --hang-timeout, and the
 * site's [run] health_check and health_timeout (no flag: a site's). */
static void test_resilience_settings(void **state)
{
	struct fx *f = *state;
	char *a1[] = { "ctrun", "--nnodes", "1:4", "--spares", "2", "--hang-timeout", "600", "x",
		       NULL };
	char *a2[] = { "ctrun", "--nnodes", "3", "x", NULL };
	char *a3[] = { "ctrun", "--nnodes", "4:1", "x", NULL };
	char *a4[] = { "ctrun", "--nnodes", "1:", "x", NULL };
	char *a5[] = { "ctrun", "--hang-timeout", "30:900", "x", NULL };
	char *a6[] = { "ctrun", "--hang-timeout", "30:", "x", NULL };
	const char *path = write_tmp(f, "[run]\nhealth_check = /etc/slurm/nodecheck --quick\n"
				     "health_timeout = 20\nspares = 1\n");
	struct err e = { 0 };

	assert_int_equal(f->o.nnodes_min, -1);
	assert_int_equal(f->o.health_timeout, 60);
	assert_int_equal(parse(&f->o, a1, &e), 0);
	assert_int_equal(f->o.nnodes_min, 1);
	assert_int_equal(f->o.nnodes_max, 4);
	assert_int_equal(f->o.nnodes, -1); /* elastic: the count is the batch ctrun's */
	assert_int_equal(f->o.spares, 2);
	assert_int_equal(f->o.hang_timeout, 600);
	assert_int_equal(options_hang_first(&f->o), 600); /* SEC, being above the minimum */
	fresh(f);
	assert_int_equal(parse(&f->o, a5, &e), 0);
	assert_int_equal(f->o.hang_timeout, 30);
	assert_int_equal(options_hang_first(&f->o), 900);
	f->o.hang_first = 0;
	assert_int_equal(options_hang_first(&f->o), HANG_FIRST_MIN);
	fresh(f);
	assert_int_equal(parse(&f->o, a6, &e), -1);
	assert_non_null(strstr(e.msg, "is not SEC or SEC:FIRST"));
	fresh(f);
	assert_int_equal(parse(&f->o, a2, &e), 0);
	assert_int_equal(f->o.nnodes, 3);
	assert_int_equal(f->o.nnodes_min, 3);
	assert_int_equal(f->o.nnodes_max, 3);
	fresh(f);
	assert_int_equal(parse(&f->o, a3, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--nnodes: '4:1' is reversed: MIN 4 is above MAX 1 (write 1:4)");
	fresh(f);
	assert_int_equal(parse(&f->o, a4, &e), -1);
	assert_non_null(strstr(e.msg, "is not a node count N or MIN:MAX"));
	fresh(f);
	assert_int_equal(options_load_file(&f->o, path, false, &e), 0);
	assert_string_equal(f->o.health_check, "/etc/slurm/nodecheck --quick");
	assert_int_equal(f->o.health_timeout, 20);
	assert_int_equal(f->o.spares, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_after_options_is_kept_verbatim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subcommand_word_and_double_dash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_flags_command_keeps_its_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeatable_env_and_mount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejects_bad_values_naming_the_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ini_sets_keys_by_section, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_flags_override_the_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ini_unknown_key_names_file_and_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ini_key_in_wrong_section_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_value_lists_the_choices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ini_bad_value_and_syntax_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_optional_file_is_fine_but_explicit_is_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layers_cli_over_env_over_config_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_error_names_the_variable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_flag_takes_a_boolean_over_the_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resilience_settings, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
