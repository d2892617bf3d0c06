/* Unit tests: an image's /.singularity.d/env scripts, as Singularity 3.4.2
 * writes them (internal/pkg/build/sources/conveyorPacker_oci.go insertEnv:
 * `export PATH="..."`, `export K=${K:-"v"}`; metadata.go insertEnvScript:
 * %environment appended to 90-environment.sh; base_environment.go:
 * 99-base.sh), sourced by /bin/sh in name order, as apptainer's exec action
 * sources them, and read back through imageenv_print (this binary with
 * IMAGEENV_PRINT_ARG, as the agent's main does). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "imageenv.h"

static char dir[4096], printer[4096];

static void put(const char *name, const char *text)
{
	char path[8192];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ctrun-test-imageenv.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_non_null(realpath("/proc/self/exe", printer));
	return 0;
}

static int teardown(void **state)
{
	char cmd[8192];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static const char docker2singularity[] =
	"#!/bin/sh\n"
	"export PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/sif/bin\"\n"
	"export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-\"/opt/sif/lib\"}\n"
	"export CTRUN_SIF_DOCKER=${CTRUN_SIF_DOCKER:-\"from docker\"}\n"
	"export CTRUN_PRESET=${CTRUN_PRESET:-\"image\"}\n";

static const char environment[] =
	"#!/bin/sh\n"
	"# Custom environment shell code should follow\n"
	"\n"
	"export CTRUN_SIF_ENV=\"from %environment\"\n"
	"LD_LIBRARY_PATH=\"/opt/sif/env-lib:$LD_LIBRARY_PATH\"\n"
	"if [ -n \"$CTRUN_SIF_DOCKER\" ]; then\n"
	"\texport CTRUN_SIF_COMPUTED=\"$(echo seen \"$CTRUN_SIF_DOCKER\")\"\n"
	"fi\n"
	"NOT_EXPORTED=1\n"
	"echo 'a banner on stdout'\n";

static const char base99[] =
	"#!/bin/sh\n"
	"if [ -z \"$LD_LIBRARY_PATH\" ]; then\n"
	"    LD_LIBRARY_PATH=\"/.singularity.d/libs\"\n"
	"else\n"
	"    LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH:/.singularity.d/libs\"\n"
	"fi\n"
	"\n"
	"PS1=\"Singularity> \"\n"
	"export LD_LIBRARY_PATH PS1\n";

/* 10 before 90 before 99 (LD_LIBRARY_PATH built in that order), `${K:-v}`
 * keeps a value the container had, %environment's shell runs (if, $(...)),
 * unexported names stay out, a script's stdout does not mix in, and the
 * shell's own PWD/SHLVL do not replace the container's. */
static void test_sources_in_order_as_apptainer(void **state)
{
	char *before[] = { "PATH=/bin", "CTRUN_PRESET=container", "PWD=/keep", NULL };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	put("10-docker2singularity.sh", docker2singularity);
	put("90-environment.sh", environment);
	put("99-base.sh", base99);
	put("README.txt", "export NOT_A_SCRIPT=1\n");
	assert_true(imageenv_has_scripts(dir));
	assert_int_equal(imageenv_source("/bin/sh", dir, printer, before, 10000, &out, &e), 0);
	assert_string_equal(strv_getenv(&out, "PATH"),
			    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/sif/bin");
	assert_string_equal(strv_getenv(&out, "LD_LIBRARY_PATH"),
			    "/opt/sif/env-lib:/opt/sif/lib:/.singularity.d/libs");
	assert_string_equal(strv_getenv(&out, "CTRUN_SIF_DOCKER"), "from docker");
	assert_string_equal(strv_getenv(&out, "CTRUN_PRESET"), "container");
	assert_string_equal(strv_getenv(&out, "CTRUN_SIF_ENV"), "from %environment");
	assert_string_equal(strv_getenv(&out, "CTRUN_SIF_COMPUTED"), "seen from docker");
	assert_string_equal(strv_getenv(&out, "PS1"), "Singularity> ");
	assert_string_equal(strv_getenv(&out, "PWD"), "/keep");
	assert_null(strv_getenv(&out, "NOT_EXPORTED"));
	assert_null(strv_getenv(&out, "NOT_A_SCRIPT"));
	assert_null(strv_getenv(&out, "SHLVL"));
	assert_null(strv_getenv(&out, "_"));
	for (size_t i = 0; i < out.n; i++)
		assert_null(strstr(out.v[i], "__ctrun"));
	strv_free(&out);
}

/* A value the image's script unsets is gone, as under apptainer. */
static void test_unset_by_a_script_is_gone(void **state)
{
	char *before[] = { "PATH=/bin", "GONE=1", NULL };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	put("50-unset.sh", "unset GONE\n");
	assert_int_equal(imageenv_source("/bin/sh", dir, printer, before, 10000, &out, &e), 0);
	assert_null(strv_getenv(&out, "GONE"));
	assert_string_equal(strv_getenv(&out, "PATH"), "/bin");
	strv_free(&out);
}

/* The directory reaches the shell as an argument, never as code. */
static void test_directory_is_data_not_code(void **state)
{
	char *before[] = { "PATH=/bin", NULL };
	char odd[4096], saved[4096];
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	snprintf(saved, sizeof(saved), "%s", dir);
	snprintf(odd, sizeof(odd), "%s/a $(exit 7) \"b` ;exit 9", saved);
	assert_int_equal(mkdir(odd, 0755), 0);
	snprintf(dir, sizeof(dir), "%s", odd);
	put("10-x.sh", "export SOURCED=yes\n");
	assert_int_equal(imageenv_source("/bin/sh", dir, printer, before, 10000, &out, &e), 0);
	snprintf(dir, sizeof(dir), "%s", saved);
	assert_string_equal(strv_getenv(&out, "SOURCED"), "yes");
	strv_free(&out);
}

/* A script that ends the shell: an error naming the scripts, no half environment. */
static void test_script_that_exits_is_an_error(void **state)
{
	char *before[] = { "PATH=/bin", NULL };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	put("10-ok.sh", "export A=1\n");
	put("20-exit.sh", "exit 3\n");
	assert_int_equal(imageenv_source("/bin/sh", dir, printer, before, 10000, &out, &e), -1);
	assert_non_null(strstr(e.msg, "exit status 3"));
	assert_non_null(strstr(e.msg, dir));
	assert_int_equal(out.n, 0);
}

/* A script that never ends: killed at the time limit, said so. */
static void test_script_that_hangs_times_out(void **state)
{
	char *before[] = { "PATH=/bin", NULL };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	put("10-spin.sh", "while :; do :; done\n");
	assert_int_equal(imageenv_source("/bin/sh", dir, printer, before, 300, &out, &e), -1);
	assert_non_null(strstr(e.msg, "did not finish"));
	assert_int_equal(out.n, 0);
}

static void test_has_scripts_wants_a_regular_sh(void **state)
{
	char path[8192];

	(void)state;
	assert_false(imageenv_has_scripts(dir));
	put("labels.json", "{}\n");
	snprintf(path, sizeof(path), "%s/90-dir.sh", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_false(imageenv_has_scripts(dir));
	put("real", "export A=1\n");
	snprintf(path, sizeof(path), "%s/10-link.sh", dir);
	assert_int_equal(symlink("real", path), 0);
	assert_true(imageenv_has_scripts(dir));
	assert_false(imageenv_has_scripts("/nonexistent/.singularity.d/env"));
}

/* The printer's format: entries, each NUL-ended, then one empty entry. */
static void test_parse_needs_the_closing_entry(void **state)
{
	char *before[] = { "PWD=/w", "SHLVL=4", NULL };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(imageenv_parse("A=1\0B=x=y\0PWD=/tmp\0_=/bin/sh\0\0", 30, before, &out,
					&e), 0);
	assert_string_equal(strv_getenv(&out, "A"), "1");
	assert_string_equal(strv_getenv(&out, "B"), "x=y");
	assert_string_equal(strv_getenv(&out, "PWD"), "/w");
	assert_string_equal(strv_getenv(&out, "SHLVL"), "4");
	assert_null(strv_getenv(&out, "_"));
	strv_free(&out);
	assert_int_equal(imageenv_parse("\0", 1, NULL, &out, &e), 0);
	assert_int_equal(out.n, 0);
	/* Cut short, no name, trailing bytes, nothing at all: refused. */
	assert_int_equal(imageenv_parse("A=1\0", 4, NULL, &out, &e), -1);
	assert_int_equal(imageenv_parse("A=1\0B", 5, NULL, &out, &e), -1);
	assert_int_equal(imageenv_parse("A\0\0", 3, NULL, &out, &e), -1);
	assert_int_equal(imageenv_parse("=1\0\0", 4, NULL, &out, &e), -1);
	assert_int_equal(imageenv_parse("A=1\0\0X", 6, NULL, &out, &e), -1);
	assert_int_equal(imageenv_parse("", 0, NULL, &out, &e), -1);
	assert_int_equal(out.n, 0);
}

/* The printer writes exactly that format. */
static void test_print_format(void **state)
{
	char *env[] = { "A=1", "B=two words", NULL };
	char buf[64];
	int p[2];
	ssize_t n;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(imageenv_print(p[1], env), 0);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf));
	close(p[0]);
	assert_int_equal(n, 17);
	assert_memory_equal(buf, "A=1\0B=two words\0\0", 17);
}

extern char **environ;

int main(int argc, char **argv)
{
	/* The printer's end, as in the agent's main. */
	if (argc == 2 && strcmp(argv[1], IMAGEENV_PRINT_ARG) == 0)
		return imageenv_print(IMAGEENV_FD, environ) < 0 ? 125 : 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sources_in_order_as_apptainer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unset_by_a_script_is_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_is_data_not_code, setup, teardown),
		cmocka_unit_test_setup_teardown(test_script_that_exits_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_script_that_hangs_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_has_scripts_wants_a_regular_sh, setup, teardown),
		cmocka_unit_test(test_parse_needs_the_closing_entry),
		cmocka_unit_test(test_print_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
