/* Unit tests: the OCI config edits and apptainer arguments that pin GPUs (gpu_pin.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json.h>

#include "apptainer/apptainer.h"
#include "gpu_pin.h"
#include "oci/oci.h"
#include "strv.h"

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
		assert_int_equal(oci_gpu_config(c, &gpus, "/opt/ctrun/ctrun-hook", NULL, &e), 0);
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

/* MIG devices keep their UUIDs inside (CUDA numbers MIG devices by what a
 * process may use); IMEX channels go to the hook as an annotation. */
static void test_oci_config_mig_uuids_and_imex(void **state)
{
	struct json_object *c = json_tokener_parse("{\"process\":{\"env\":[]}}"), *a, *v;
	struct strv gpus = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&gpus, "MIG-4f3b0b45-5e6e-5b2a-9b1e-6c2e7b8a9d10");
	strv_push(&gpus, "MIG-11111111-0000-0000-0000-000000000000");
	assert_int_equal(oci_gpu_config(c, &gpus, "/opt/ctrun/ctrun-hook", "0,3", &e), 0);
	assert_string_equal(env_of(c, "CUDA_VISIBLE_DEVICES"),
			    "MIG-4f3b0b45-5e6e-5b2a-9b1e-6c2e7b8a9d10,"
			    "MIG-11111111-0000-0000-0000-000000000000");
	assert_true(json_object_object_get_ex(c, "annotations", &a));
	assert_true(json_object_object_get_ex(a, "org.ctrun.imex-channels", &v));
	assert_string_equal(json_object_get_string(v), "0,3");
	json_object_put(c);
	/* Without imex: no annotation (the container's NVIDIA_IMEX_CHANNELS
	 * still counts for the hook). */
	c = json_tokener_parse("{}");
	assert_int_equal(oci_gpu_config(c, &gpus, "/opt/ctrun/ctrun-hook", NULL, &e), 0);
	assert_true(json_object_object_get_ex(c, "annotations", &a));
	assert_false(json_object_object_get_ex(a, "org.ctrun.imex-channels", &v));
	json_object_put(c);
	strv_free(&gpus);
}

static bool has_bind(const struct ctr_mounts *ms, const char *src, const char *dst)
{
	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->v[i].src, src) == 0 && strcmp(ms->v[i].dst, dst) == 0)
			return true;
	return false;
}

static void test_apptainer_arguments(void **state)
{
	struct strv gpus = { 0 }, flags = { 0 }, env = { 0 };
	struct ctr_mounts binds = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&gpus, "1");
	strv_push(&gpus, "3");
	assert_int_equal(app_gpu_args(&gpus, false, &flags, &binds, &env, &e), 0);
	assert_int_equal(flags.n, 1);
	assert_string_equal(flags.v[0], "--nv");
	assert_int_equal(binds.n, 0);
	assert_string_equal(env.v[0], "CUDA_VISIBLE_DEVICES=1,3");
	strv_free(&flags);
	strv_free(&env);
	assert_int_equal(app_gpu_args(&gpus, true, &flags, &binds, &env, &e), 0);
	assert_string_equal(flags.v[0], "--contain");
	assert_true(strv_find(&flags, "--nv") < 0);
	assert_true(has_bind(&binds, "/dev/nvidia1", "/dev/nvidia1"));
	assert_true(has_bind(&binds, "/dev/nvidia3", "/dev/nvidia3"));
	assert_false(has_bind(&binds, "/dev/nvidia0", "/dev/nvidia0"));
	assert_string_equal(env.v[0], "CUDA_VISIBLE_DEVICES=0,1");
	strv_free(&flags);
	strv_free(&env);
	mounts_free(&binds);
	/* Isolation binds device nodes by index: a UUID cannot be one. */
	strv_free(&gpus);
	strv_push(&gpus, "GPU-0d9b6a9e-1c2f-4b1e-9d6c-3f1f2a7e8b00");
	assert_int_equal(app_gpu_args(&gpus, true, &flags, &binds, &env, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "not UUIDs"));
	strv_free(&flags);
	strv_free(&env);
	mounts_free(&binds);
	strv_free(&gpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oci_config_pins_and_renumbers),
		cmocka_unit_test(test_oci_config_mig_uuids_and_imex),
		cmocka_unit_test(test_apptainer_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
