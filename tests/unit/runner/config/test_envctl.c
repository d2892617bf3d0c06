/* Unit tests: --env-file lines as `docker run --env-file` reads them (KEY=VALUE,
 * KEY, comments, blank lines, values byte for byte), one error naming FILE:LINE
 * for a bad line, --env KEY checks, and the --clean-env filter. */
#include "ctrtest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envctl.h"
#include "options.h"

static int parse(const char *text, struct strv *out, struct err *e)
{
	return envctl_file_parse(text, strlen(text), "vars.env", out, e);
}

static void test_env_file_sets_takes_and_skips(void **state)
{
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(parse("# a comment\n\nA=1\n  B=two words  \nHOSTVAR\nC=\"quoted\"\n"
			       "D=x=y\nE=\n\t# indented comment\nF='s'", &v, &e), 0);
	assert_int_equal(v.n, 7);
	assert_string_equal(v.v[0], "A=1");
	assert_string_equal(v.v[1], "B=two words  ");  /* leading blanks go, trailing stay */
	assert_string_equal(v.v[2], "HOSTVAR");        /* the host's value, later */
	assert_string_equal(v.v[3], "C=\"quoted\"");   /* no quote processing */
	assert_string_equal(v.v[4], "D=x=y");
	assert_string_equal(v.v[5], "E=");
	assert_string_equal(v.v[6], "F='s'");          /* no newline at the end: still read */
	strv_free(&v);
}

static void test_env_file_crlf_and_bom_as_docker(void **state)
{
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(parse("\xef\xbb\xbf" "A=1\r\nB=$HOME\\n\r\n", &v, &e), 0);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "A=1");
	assert_string_equal(v.v[1], "B=$HOME\\n"); /* no expansion, no escapes */
	strv_free(&v);
}

static void test_env_file_bad_line_names_file_and_line(void **state)
{
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(parse("A=1\n=nokey\n", &v, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "vars.env:2"));
	assert_non_null(strstr(e.msg, "no variable name"));
	strv_free(&v);
	assert_int_equal(parse("# ok\nexport A=1\n", &v, &e), -1);
	assert_non_null(strstr(e.msg, "vars.env:2"));
	assert_non_null(strstr(e.msg, "white space"));
	strv_free(&v);
	assert_int_equal(parse("A=1\nB\nRANK\n", &v, &e), -1);
	assert_non_null(strstr(e.msg, "vars.env:3"));
	assert_non_null(strstr(e.msg, "RANK=VALUE"));
	strv_free(&v);
	assert_int_equal(envctl_file_parse("A=1\nB=x\0y\n", 10, "f", &v, &e), -1);
	assert_non_null(strstr(e.msg, "f:2: a NUL byte"));
	strv_free(&v);
	/* RANK=VALUE sets it for every worker: allowed, as --env RANK=0. */
	assert_int_equal(parse("RANK=0\n", &v, &e), 0);
	strv_free(&v);
}

static void test_env_file_load_bounds_and_kinds(void **state)
{
	char dir[] = "/tmp/ctrun-envctl-XXXXXX", path[128];
	struct strv v = { 0 };
	struct err e = { 0 };
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(envctl_file_load(path, &v, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--env-file"));
	assert_non_null(strstr(e.msg, "missing"));
	assert_int_equal(envctl_file_load(dir, &v, &e), -1); /* a directory */
	assert_non_null(strstr(e.msg, "not a regular file"));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(envctl_file_load(path, &v, &e), -1); /* no hang */
	assert_non_null(strstr(e.msg, "not a regular file"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/big", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, ENVFILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(envctl_file_load(path, &v, &e), -1);
	assert_non_null(strstr(e.msg, "larger than"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/ok", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "K=v w\n", 6), 6);
	close(fd);
	assert_int_equal(envctl_file_load(path, &v, &e), 0);
	assert_int_equal(v.n, 1);
	assert_string_equal(v.v[0], "K=v w");
	strv_free(&v);
	unlink(path);
	rmdir(dir);
}

static void test_env_key_checks(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(envctl_check("A=1", "--env", &e), 0);
	assert_int_equal(envctl_check("HOSTVAR", "--env", &e), 0);
	assert_int_equal(envctl_check("RANK=3", "--env", &e), 0);
	assert_int_equal(envctl_check("=x", "--env", &e), -1);
	assert_string_equal(e.msg, "--env: '=x' has no variable name (give KEY=VALUE, or KEY for "
			    "the host's value)");
	assert_int_equal(envctl_check("", "--env", &e), -1);
	assert_int_equal(envctl_check("MASTER_ADDR", "CTRUN_ENV", &e), -1);
	assert_non_null(strstr(e.msg, "CTRUN_ENV: MASTER_ADDR is set by ctrun"));
	assert_true(envctl_contract("LOCAL_RANK", 10));
	assert_false(envctl_contract("LOCAL_RANKS", 11));
	assert_false(envctl_contract("OMP_NUM_THREADS", 15)); /* a default, not the contract */
}

/* The option layer: --env KEY on the command line, an ini's `env = KEY`. */
static void test_env_option_accepts_a_bare_key(void **state)
{
	struct options o;
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	assert_int_equal(options_set(&o, "env", "CUDA_VERSION", "--env", &e), 0);
	assert_int_equal(options_set(&o, "env", "A=1", "--env", &e), 0);
	assert_int_equal(options_set(&o, "env", "=1", "--env", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(options_set(&o, "env", "WORLD_SIZE", "--env", &e), -1);
	assert_int_equal(options_set(&o, "clean_env", "true", "--clean-env", &e), 0);
	assert_true(o.clean_env);
	assert_int_equal(options_set(&o, "env_file", "a.env", "--env-file", &e), 0);
	assert_int_equal(o.env.n, 2);
	assert_string_equal(o.env.v[0], "CUDA_VERSION");
	assert_string_equal(o.env_files.v[0], "a.env");
	options_free(&o);
}

static void test_clean_env_keeps_slurm_term_and_identity(void **state)
{
	(void)state;
	assert_true(envctl_clean_keep("SLURM_JOB_ID=5"));
	assert_true(envctl_clean_keep("TERM=xterm"));
	assert_true(envctl_clean_keep("HOME=/home/u"));
	assert_true(envctl_clean_keep("USER=u"));
	assert_true(envctl_clean_keep("LOGNAME=u"));
	assert_false(envctl_clean_keep("LANG=C.UTF-8"));
	assert_false(envctl_clean_keep("PATH=/usr/bin"));
	assert_false(envctl_clean_keep("SECRET=1"));
	assert_false(envctl_clean_keep("SLURMX=1"));
	assert_false(envctl_clean_keep("HOMEDIR=/x"));
	assert_false(envctl_clean_keep("CTRUN_JOB_SECRET=00"));
}

static void test_host_values_only_for_bare_keys_the_host_has(void **state)
{
	char *entries[] = { "A", "B=1", "MISSING", "C", NULL };
	char *host[] = { "A=from host", "B=host b", "C=", "AA=no", NULL };
	struct strv v = { 0 };

	(void)state;
	assert_int_equal(envctl_host_values(entries, host, &v), 0);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "A=from host");
	assert_string_equal(v.v[1], "C=");
	strv_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_file_sets_takes_and_skips),
		cmocka_unit_test(test_env_file_crlf_and_bom_as_docker),
		cmocka_unit_test(test_env_file_bad_line_names_file_and_line),
		cmocka_unit_test(test_env_file_load_bounds_and_kinds),
		cmocka_unit_test(test_env_key_checks),
		cmocka_unit_test(test_env_option_accepts_a_bare_key),
		cmocka_unit_test(test_clean_env_keeps_slurm_term_and_identity),
		cmocka_unit_test(test_host_values_only_for_bare_keys_the_host_has),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
