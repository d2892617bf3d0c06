/* Unit tests: which GPUs a container gets in node and task mode (gpu_pin_select):
 * host ids through core/slurmgpu.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "container.h"

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

static void test_nodevfiles_step_keeps_the_ids(void **state)
{
	/* Slurm's NoDevFiles names no device to map through: the ids stay
	 * (they were once replaced by the word "NoDevFiles" itself). */
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=NoDevFiles", NULL };
	struct topo t = { .mode = MODE_NODE };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&t.gpus, "0");
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0], "0");
	strv_free(&out);
	strv_free(&t.gpus);
}

static void test_task_mode_picks_among_mapped_ids(void **state)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=6,7", NULL };
	struct topo t = { .mode = MODE_TASK, .local_rank_base = 2 };
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	strv_push(&t.gpus, "0");
	strv_push(&t.gpus, "1");
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0], "6");
	strv_free(&out);
	t.local_rank_base = -1;
	assert_int_equal(gpu_pin_select(&t, env, &out, &e), 0);
	assert_string_equal(out.v[0], "6");
	strv_free(&out);
	strv_free(&t.gpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_mode_selects_local_ranks_gpu),
		cmocka_unit_test(test_constrained_devices_map_to_host_ids),
		cmocka_unit_test(test_nodevfiles_step_keeps_the_ids),
		cmocka_unit_test(test_task_mode_picks_among_mapped_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
