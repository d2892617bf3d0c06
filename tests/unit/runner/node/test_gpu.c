/* Unit tests: which GPUs a task has, from the scheduler's variables (gpu.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gpu.h"

static void test_gpu_sources_in_order(void **state)
{
	char *e1[] = { "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_GPUS=0,1,2,3", NULL };
	char *e2[] = { "SLURM_STEP_GPUS=5,7", NULL };
	char *e3[] = { "SLURM_GPUS_ON_NODE=3", NULL };
	char *e4[] = { "CUDA_VISIBLE_DEVICES=NoDevFiles", NULL };
	struct strv g = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(gpu_ids_from_env(e1, 8, &g, &e), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.v[0], "2");
	strv_free(&g);
	assert_int_equal(gpu_ids_from_env(e2, 8, &g, &e), 0);
	assert_string_equal(g.v[1], "7");
	strv_free(&g);
	assert_int_equal(gpu_ids_from_env(e3, 8, &g, &e), 0);
	assert_int_equal(g.n, 3);
	strv_free(&g);
	assert_int_equal(gpu_ids_from_env(e4, 0, &g, &e), 0);
	assert_int_equal(g.n, 0);
	strv_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_sources_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
