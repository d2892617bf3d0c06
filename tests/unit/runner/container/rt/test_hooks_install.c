/* Unit tests: `ctrun hooks install|uninstall` writes exactly its own
 * files, idempotently, and never touches a foreign one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <json.h>

#include "enroot/enroot.h"
#include "hooks_install.h"
#include "oci/oci.h"
#include "util.h"

/* Unit tests run from the repository root (make unit). */
#define CTRUN_SOURCE_DIR "."

static char dir[64], hook[128];

static int setup(void **state)
{
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ctrun-test-hooks.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(hook, sizeof(hook), "%s/ctrun-hook", dir);
	f = fopen(hook, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(hook, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_install_is_idempotent_and_uninstall_removes_it(void **state)
{
	char d[128], path[256];
	struct err e = { 0 };
	struct stat st;

	(void)state;
	snprintf(d, sizeof(d), "%s/enroot/hooks.d", dir);
	assert_int_equal(hooks_install("enroot", d, hook, path, sizeof(path), &e), 0);
	assert_non_null(strstr(path, "/enroot/hooks.d/" ENROOT_HOOK_FILE));
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_mode & S_IXUSR); /* enroot runs only executable hooks */
	assert_int_equal(hooks_install("enroot", d, hook, path, sizeof(path), &e), 1);
	assert_int_equal(hooks_uninstall("enroot", d, path, sizeof(path), &e), 0);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(hooks_uninstall("enroot", d, path, sizeof(path), &e), 1);
}

static void test_foreign_or_edited_files_are_left_alone(void **state)
{
	char d[128], path[256], *text;
	struct err e = { 0 };
	FILE *f;

	(void)state;
	snprintf(d, sizeof(d), "%s/oci", dir);
	assert_int_equal(mkdir_p(d, 0755), 0);
	snprintf(path, sizeof(path), "%s/" OCI_HOOK_FILE, d);
	f = fopen(path, "w");
	fputs("{\"version\":\"1.0.0\"}\n", f);
	fclose(f);
	assert_int_equal(hooks_install("oci", d, hook, path, sizeof(path), &e), -1);
	assert_non_null(strstr(e.msg, "not written by ctrun: not overwriting"));
	assert_int_equal(hooks_uninstall("oci", d, path, sizeof(path), &e), -1);
	text = read_file(path, NULL);
	assert_string_equal(text, "{\"version\":\"1.0.0\"}\n");
	free(text);
	unlink(path);
	/* ours, then edited by hand: uninstall refuses */
	assert_int_equal(hooks_install("oci", d, hook, path, sizeof(path), &e), 0);
	f = fopen(path, "a");
	fputs(" ", f);
	fclose(f);
	assert_int_equal(hooks_uninstall("oci", d, path, sizeof(path), &e), -1);
	assert_non_null(strstr(e.msg, "changed since"));
}

static void test_an_older_ctrun_file_is_updated(void **state)
{
	char d[128], path[256], *old = hooks_file_text("enroot", "/opt/ctrun-0.1/bin/ctrun-hook");
	struct err e = { 0 };
	FILE *f;

	(void)state;
	assert_non_null(old);
	assert_true(hooks_file_is_ours("enroot", old));
	snprintf(d, sizeof(d), "%s/upd", dir);
	assert_int_equal(mkdir_p(d, 0755), 0);
	snprintf(path, sizeof(path), "%s/" ENROOT_HOOK_FILE, d);
	f = fopen(path, "w");
	fputs(old, f);
	fclose(f);
	assert_int_equal(hooks_install("enroot", d, hook, path, sizeof(path), &e), 0);
	free(old);
	old = read_file(path, NULL);
	assert_non_null(strstr(old, hook));
	free(old);
}

static void test_oci_hooks_d_json(void **state)
{
	char *text = hooks_file_text("oci", "/usr/bin/ctrun-hook");
	struct json_object *o = json_tokener_parse(text), *v, *w;

	(void)state;
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "version", &v));
	assert_string_equal(json_object_get_string(v), "1.0.0");
	assert_true(json_object_object_get_ex(o, "when", &v));
	assert_true(json_object_object_get_ex(v, "annotations", &w));
	assert_true(json_object_object_get_ex(w, "^org\\.ctrun\\.enabled$", &v));
	assert_string_equal(json_object_get_string(v), "^true$");
	assert_true(json_object_object_get_ex(o, "stages", &v));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
			    "createContainer");
	json_object_put(o);
	free(text);
	assert_null(hooks_file_text("oci", "relative/ctrun-hook"));
	assert_null(hooks_file_text("enroot", "/a b/ctrun-hook"));
	assert_null(hooks_file_text("enroot", "/x/$(reboot)"));
}

static void test_shipped_hooks_d_file_is_what_install_writes(void **state)
{
	/* hooks/ctrun-hook.json is for packages installing /usr/bin/ctrun-hook;
	 * `ctrun hooks uninstall oci` must recognise it as ctrun's. */
	char *shipped = read_file(CTRUN_SOURCE_DIR "/hooks/ctrun-hook.json", NULL);
	char *text = hooks_file_text("oci", "/usr/bin/ctrun-hook");

	(void)state;
	assert_non_null(shipped);
	assert_string_equal(shipped, text);
	assert_true(hooks_file_is_ours("oci", shipped));
	free(shipped);
	free(text);
}

static void test_enroot_dirs_follow_enroot_settings(void **state)
{
	char *user[] = { "HOME=/home/u", NULL };
	char *xdg[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", NULL };
	char *conf[] = { "HOME=/home/u", "ENROOT_CONFIG_PATH=/e", "ENROOT_SYSCONF_PATH=/s", NULL };
	char *empty[] = { "HOME=/home/u", "ENROOT_CONFIG_PATH=", "ENROOT_SYSCONF_PATH=", NULL };
	char *nohome[] = { "PATH=/bin", NULL };
	char buf[256];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hooks_dir("enroot", false, NULL, user, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/home/u/.config/enroot/hooks.d");
	assert_int_equal(hooks_dir("enroot", false, NULL, xdg, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/cfg/enroot/hooks.d");
	assert_int_equal(hooks_dir("enroot", false, NULL, conf, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/e/hooks.d");
	assert_int_equal(hooks_dir("enroot", true, NULL, conf, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/s/hooks.d");
	assert_int_equal(hooks_dir("enroot", true, NULL, user, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/etc/enroot/hooks.d");
	/* enroot's ${ENROOT_SYSCONF_PATH:-/etc/enroot}: empty is unset. */
	assert_int_equal(hooks_dir("enroot", true, NULL, empty, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/etc/enroot/hooks.d");
	assert_int_equal(hooks_dir("enroot", false, NULL, empty, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/home/u/.config/enroot/hooks.d");
	assert_int_equal(hooks_dir("enroot", false, NULL, nohome, buf, sizeof(buf), &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(hooks_dir("enroot", true, NULL, nohome, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/etc/enroot/hooks.d");
	assert_int_equal(hooks_dir("enroot", false, "/d", nohome, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "/d");
	assert_int_equal(hooks_dir("oci", false, NULL, user, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, OCI_HOOKS_SYSTEM_DIR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_is_idempotent_and_uninstall_removes_it),
		cmocka_unit_test(test_foreign_or_edited_files_are_left_alone),
		cmocka_unit_test(test_an_older_ctrun_file_is_updated),
		cmocka_unit_test(test_oci_hooks_d_json),
		cmocka_unit_test(test_shipped_hooks_d_file_is_what_install_writes),
		cmocka_unit_test(test_enroot_dirs_follow_enroot_settings),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
