/* Unit tests: `ctrun hooks install|uninstall` writes exactly its own
 * files, idempotently, and never touches a foreign one; the OCI config
 * edits and apptainer arguments the runtime adapters use to pin GPUs. */
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

#include "gpu_pin.h"
#include "hooks_cmd.h"
#include "options.h"
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
	assert_non_null(strstr(path, "/enroot/hooks.d/" HOOKS_ENROOT_FILE));
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
	snprintf(path, sizeof(path), "%s/" HOOKS_OCI_FILE, d);
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
	snprintf(path, sizeof(path), "%s/" HOOKS_ENROOT_FILE, d);
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
	assert_int_equal(hooks_dir("oci", false, NULL, user, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, HOOKS_OCI_SYSTEM_DIR);
}

static const char *env_of(struct json_object *config, const char *key)
{
	struct json_object *p, *env;

	assert_true(json_object_object_get_ex(config, "process", &p));
	assert_true(json_object_object_get_ex(p, "env", &env));
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(env, i));

		if (strncmp(s, key, strlen(key)) == 0 && s[strlen(key)] == '=')
			return s + strlen(key) + 1;
	}
	return NULL;
}

static void test_oci_config_pins_and_renumbers(void **state)
{
	struct json_object *c = json_tokener_parse(
		"{\"process\":{\"env\":[\"PATH=/bin\",\"CUDA_VISIBLE_DEVICES=2,3\"]},"
		"\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]}}}");
	struct strv gpus = { 0 };
	struct json_object *v, *a, *h;
	struct err e = { 0 };

	(void)state;
	strv_push(&gpus, "2");
	strv_push(&gpus, "3");
	for (int round = 0; round < 2; round++) /* a second call changes nothing */
		assert_int_equal(gpu_pin_oci_config(c, &gpus, "/opt/ctrun/ctrun-hook", &e), 0);
	assert_string_equal(env_of(c, "CUDA_VISIBLE_DEVICES"), "0,1");
	assert_string_equal(env_of(c, "NVIDIA_VISIBLE_DEVICES"), "2,3");
	assert_string_equal(env_of(c, "PATH"), "/bin");
	assert_true(json_object_object_get_ex(c, "annotations", &a));
	assert_true(json_object_object_get_ex(a, "org.ctrun.gpus", &v));
	assert_string_equal(json_object_get_string(v), "2,3");
	assert_true(json_object_object_get_ex(c, "hooks", &h));
	assert_true(json_object_object_get_ex(h, "createContainer", &v));
	assert_int_equal(json_object_array_length(v), 1);
	assert_true(json_object_object_get_ex(c, "linux", &v));
	assert_true(json_object_object_get_ex(v, "resources", &v));
	assert_true(json_object_object_get_ex(v, "devices", &v));
	/* deny-all first, then 195:2, 195:3, nvidiactl, modeset (+ uvm when loaded) */
	assert_true(json_object_array_length(v) >= 5);
	assert_true(json_object_object_get_ex(json_object_array_get_idx(v, 1), "minor", &a));
	assert_int_equal(json_object_get_int(a), 2);
	json_object_put(c);
	strv_free(&gpus);
}

static void test_apptainer_arguments(void **state)
{
	struct strv gpus = { 0 }, argv = { 0 }, env = { 0 }, binds = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&gpus, "1");
	strv_push(&gpus, "3");
	assert_int_equal(gpu_pin_apptainer_args(&gpus, false, NULL, &argv, &env, &e), 0);
	assert_string_equal(argv.v[0], "--nv");
	assert_string_equal(env.v[0], "CUDA_VISIBLE_DEVICES=1,3");
	strv_free(&argv);
	strv_free(&env);
	strv_push(&binds, "/usr/lib64/libcuda.so.535:/.singularity.d/libs/libcuda.so.1:ro");
	assert_int_equal(gpu_pin_apptainer_args(&gpus, true, &binds, &argv, &env, &e), 0);
	assert_string_equal(argv.v[0], "--contain");
	assert_true(strv_find(&argv, "--nv") < 0);
	assert_true(strv_find(&argv, "/dev/nvidia1:/dev/nvidia1") > 0);
	assert_true(strv_find(&argv, "/dev/nvidia3:/dev/nvidia3") > 0);
	assert_true(strv_find(&argv, "/usr/lib64/libcuda.so.535:/.singularity.d/libs/libcuda.so.1:ro") > 0);
	assert_string_equal(env.v[0], "CUDA_VISIBLE_DEVICES=0,1");
	strv_free(&argv);
	strv_free(&env);
	strv_free(&binds);
	strv_free(&gpus);
}

static void test_task_mode_selects_local_ranks_gpu(void **state)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=4,5", "SLURM_STEP_GPUS=4,5", NULL };
	struct topo t = { .mode = MODE_TASK, .local_rank_base = 3 };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&t.gpus, "4");
	strv_push(&t.gpus, "5");
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0], "5");
	strv_free(&out);
	t.mode = MODE_NODE;
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_int_equal(out.n, 2);
	strv_free(&out);
	strv_free(&t.gpus);
}

static void test_constrained_devices_map_to_host_ids(void **state)
{
	/* ConstrainDevices: CUDA_VISIBLE_DEVICES=0,1 inside the cgroup of a
	 * step that has host GPUs 2,3. */
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=2,3", NULL };
	struct topo t = { .mode = MODE_NODE };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&t.gpus, "0");
	strv_push(&t.gpus, "1");
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0], "2");
	assert_string_equal(out.v[1], "3");
	strv_free(&out);
	strv_free(&t.gpus);
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
		cmocka_unit_test(test_oci_config_pins_and_renumbers),
		cmocka_unit_test(test_apptainer_arguments),
		cmocka_unit_test(test_task_mode_selects_local_ranks_gpu),
		cmocka_unit_test(test_constrained_devices_map_to_host_ids),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
