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
#include "slurmgpu.h"

/* gpu_pin_select for a ctrun whose topology has the GPUs of CUDA_VISIBLE_DEVICES
 * (env's first entry), in `mode` with local rank `base`; the ids as "a,b". */
static const char *pinned(char **env, long mode, long base)
{
	static char out[256];
	struct topo t = { .mode = mode, .local_rank_base = base };
	struct strv ids = { 0 };
	struct err e = { 0 };
	size_t off = 0;

	assert_int_equal(slurmgpu_split(env[0] + strlen("CUDA_VISIBLE_DEVICES="), &t.gpus), 0);
	assert_int_equal(gpu_pin_select(&t, env, &ids, &e), 0);
	out[0] = '\0';
	for (size_t i = 0; i < ids.n; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s", i ? "," : "",
					ids.v[i]);
	strv_free(&ids);
	strv_free(&t.gpus);
	return out;
}

static void test_task_mode_selects_local_ranks_gpu(void **state)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=4,5", "SLURM_STEP_GPUS=4,5", NULL };

	(void)state;
	assert_string_equal(pinned(env, MODE_TASK, 3), "5");
	assert_string_equal(pinned(env, MODE_NODE, 3), "4,5");
}

static void test_constrained_devices_map_to_host_ids(void **state)
{
	/* ConstrainDevices: CUDA_VISIBLE_DEVICES=0,1 inside the cgroup of a
	 * step that has host GPUs 2,3. */
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=2,3", NULL };

	(void)state;
	assert_string_equal(pinned(env, MODE_NODE, 0), "2,3");
}

static void test_nodevfiles_step_keeps_the_ids(void **state)
{
	/* Slurm's NoDevFiles names no device to map through: the ids stay
	 * (they were once replaced by the word "NoDevFiles" itself). */
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=NoDevFiles", NULL };

	(void)state;
	assert_string_equal(pinned(env, MODE_NODE, 0), "0");
}

static void test_task_mode_picks_among_mapped_ids(void **state)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=6,7", NULL };

	(void)state;
	assert_string_equal(pinned(env, MODE_TASK, 2), "6");
	assert_string_equal(pinned(env, MODE_TASK, 1), "7");
	/* No local rank known: the first. */
	assert_string_equal(pinned(env, MODE_TASK, -1), "6");
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
