/* Unit tests: the libslurm of the Slurm in use is found next to the Slurm
 * commands on PATH, then SLURM_CONF's install, before the dynamic linker's
 * (slurmfind.h).  Each test builds fake installs: the files are not
 * libraries, the choice only looks at names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "slurmfind.h"

static char top[64];

static void touch(const char *rel, mode_t mode)
{
	char p[256], cmd[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/ctrun-test-slurmfind.XXXXXX");
	assert_non_null(mkdtemp(top));
	/* A Debian-like install (multiarch) and a newer one in /opt. */
	touch("usr/bin/srun", 0755);
	touch("usr/lib/x86_64-linux-gnu/libslurm.so.38", 0644);
	touch("opt/slurm-new/bin/srun", 0755);
	touch("opt/slurm-new/bin/scontrol", 0755);
	touch("opt/slurm-new/etc/slurm.conf", 0644);
	touch("opt/slurm-new/lib/libslurm.so.45", 0644);
	touch("opt/slurm-new/lib/libslurm.so.45.0.0", 0644);
	touch("opt/slurm-new/lib/libslurm.so.9", 0644); /* an older, still there */
	touch("opt/slurm-new/lib/libslurm.so", 0644);   /* the -dev name: never picked */
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static void find(const char *path, const char *conf, const char *lib, struct slurmlib_choice *c)
{
	char p[512], cf[256], l[256];
	char *env[4] = { NULL };
	size_t n = 0;

	if (path != NULL) {
		snprintf(p, sizeof(p), "PATH=%s/%s:/nonexistent", top, path);
		env[n++] = p;
	}
	if (conf != NULL) {
		snprintf(cf, sizeof(cf), "SLURM_CONF=%s/%s", top, conf);
		env[n++] = cf;
	}
	if (lib != NULL) {
		snprintf(l, sizeof(l), "CTRUN_LIBSLURM=%s", lib);
		env[n++] = l;
	}
	slurmlib_find(env, c);
}

static void test_the_install_of_srun_on_path_wins(void **state)
{
	struct slurmlib_choice c;
	char want[256];

	(void)state;
	find("opt/slurm-new/bin", NULL, NULL, &c);
	snprintf(want, sizeof(want), "%s/opt/slurm-new/lib/libslurm.so.45", top);
	assert_string_equal(c.path, want);
	assert_false(c.only);
	assert_non_null(strstr(c.why, "srun on PATH"));
	find("usr/bin", NULL, NULL, &c);
	snprintf(want, sizeof(want), "%s/usr/lib/x86_64-linux-gnu/libslurm.so.38", top);
	assert_string_equal(c.path, want);
}

static void test_slurm_conf_when_no_command_is_on_path(void **state)
{
	struct slurmlib_choice c;
	char want[256];

	(void)state;
	find("nowhere", "opt/slurm-new/etc/slurm.conf", NULL, &c);
	snprintf(want, sizeof(want), "%s/opt/slurm-new/lib/libslurm.so.45", top);
	assert_string_equal(c.path, want);
	assert_non_null(strstr(c.why, "SLURM_CONF"));
}

static void test_ctrun_libslurm_is_the_only_choice(void **state)
{
	struct slurmlib_choice c;

	(void)state;
	find("opt/slurm-new/bin", NULL, "libslurm.so.41", &c);
	assert_string_equal(c.path, "libslurm.so.41");
	assert_true(c.only);
}

static void test_nothing_found_leaves_the_dynamic_linker(void **state)
{
	struct slurmlib_choice c;

	(void)state;
	find("nowhere", NULL, NULL, &c);
	assert_string_equal(c.path, "");
	assert_false(c.only);
	assert_non_null(strstr(c.why, "dynamic linker"));
}

/* A look is kept for the same PATH, SLURM_CONF and CTRUN_LIBSLURM: the
 * install moved away after the first look is not looked at again (a ctrun
 * start asks several times); another PATH is looked at. */
static void test_a_look_is_kept_for_the_same_environment(void **state)
{
	struct slurmlib_choice c;
	char want[256], from[256], to[256];

	(void)state;
	touch("kept/bin/srun", 0755);
	touch("kept/lib/libslurm.so.41", 0644);
	find("kept/bin", NULL, NULL, &c);
	snprintf(want, sizeof(want), "%s/kept/lib/libslurm.so.41", top);
	assert_string_equal(c.path, want);
	snprintf(from, sizeof(from), "%s/kept/lib", top);
	snprintf(to, sizeof(to), "%s/kept/lib.moved", top);
	assert_int_equal(rename(from, to), 0);
	find("kept/bin", NULL, NULL, &c);
	assert_string_equal(c.path, want);
	find("usr/bin", NULL, NULL, &c);
	find("kept/bin", NULL, NULL, &c);
	assert_string_equal(c.path, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_install_of_srun_on_path_wins),
		cmocka_unit_test(test_slurm_conf_when_no_command_is_on_path),
		cmocka_unit_test(test_ctrun_libslurm_is_the_only_choice),
		cmocka_unit_test(test_nothing_found_leaves_the_dynamic_linker),
		cmocka_unit_test(test_a_look_is_kept_for_the_same_environment),
	};

	return cmocka_run_group_tests_name("slurmfind", tests, setup, teardown);
}
