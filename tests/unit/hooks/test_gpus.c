/* Unit tests: which GPUs ctrun-hook gives a container, from the variables
 * a runtime or Slurm sets (each test shows them), onto a host inventory
 * built in the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpus.h"

/* A host with GPUs /dev/nvidia0..n-1; the first two have driver UUIDs. */
static struct hook_gpu_inv host(size_t n)
{
	struct hook_gpu_inv inv;

	memset(&inv, 0, sizeof(inv));
	for (size_t i = 0; i < n; i++)
		inv.v[i].minor = (long)i;
	inv.n = n;
	strcpy(inv.v[0].uuid, "GPU-aaaa0000-1111-2222-3333-444455556666");
	strcpy(inv.v[1].uuid, "GPU-bbbb0000-1111-2222-3333-444455556666");
	return inv;
}

/* Chooses and resolves; returns the minors as "a,b,c" or the error. */
static const char *pick(const char *ann, const char *mode, char **env, size_t ngpus)
{
	static char out[1024];
	struct hook_gpu_inv inv = host(ngpus);
	struct hook_gpu g[HOOK_GPU_MAX];
	struct hook_gpu_choice c;
	struct err e = { 0 };
	size_t n = 0, off = 0;

	if (hook_gpus_choose(ann, mode, env, &c, &e) < 0)
		return snprintf(out, sizeof(out), "error: %s", e.msg), out;
	if (c.kind == HOOK_GPUS_UNSET || c.kind == HOOK_GPUS_VOID) {
		const char *r = c.kind == HOOK_GPUS_UNSET ? "unset" : "void";

		hook_gpu_choice_free(&c);
		return r;
	}
	if (hook_gpus_resolve(&c, &inv, g, &n, &e) < 0) {
		hook_gpu_choice_free(&c);
		return snprintf(out, sizeof(out), "error: %s", e.msg), out;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%ld", i ? "," : "",
					g[i].minor);
	hook_gpu_choice_free(&c);
	return out;
}

static void test_annotation_is_used_as_is(void **state)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_LOCALID=1", NULL };

	(void)state;
	assert_string_equal(pick("2,3", NULL, env, 4), "2,3");
	assert_string_equal(pick("", NULL, env, 4), "void");
}

static void test_ids_sort_numerically_ten_after_nine(void **state)
{
	(void)state;
	assert_string_equal(pick("10,9,2,10", NULL, NULL, 12), "2,9,10");
}

static void test_unknown_gpu_is_an_error_naming_it(void **state)
{
	char *env[] = { "SLURM_STEP_GPUS=3,7", NULL };
	const char *r = pick(NULL, NULL, env, 4);

	(void)state;
	assert_non_null(strstr(r, "SLURM_STEP_GPUS names GPU '7'"));
	assert_non_null(strstr(pick("x1", NULL, NULL, 4), "'x1' is not a GPU index or UUID"));
	assert_non_null(strstr(pick("1,", NULL, NULL, 4), "trailing comma"));
	assert_non_null(strstr(pick("MIG-x!", NULL, NULL, 4), "nor a MIG device"));
}

static void test_uuids_map_to_their_minor(void **state)
{
	(void)state;
	assert_string_equal(pick("GPU-bbbb0000-1111-2222-3333-444455556666,0", NULL, NULL, 4), "0,1");
	assert_non_null(strstr(pick("GPU-cccc", NULL, NULL, 4), "no such UUID"));
}

static void test_cuda_visible_devices_relative_to_slurm_step_gpus(void **state)
{
	/* ConstrainDevices: Slurm numbers CUDA_VISIBLE_DEVICES inside the
	 * step's cgroup, SLURM_STEP_GPUS names the host GPUs. */
	char *constrained[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=2,3", NULL };
	char *per_task[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=3", NULL };
	/* No device cgroup: both name host GPUs. */
	char *plain[] = { "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_GPUS=2,3", NULL };
	char *narrowed[] = { "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=0,1,2,3", NULL };

	(void)state;
	assert_string_equal(pick(NULL, NULL, constrained, 4), "2,3");
	assert_string_equal(pick(NULL, NULL, per_task, 4), "3");
	assert_string_equal(pick(NULL, NULL, plain, 4), "2,3");
	assert_string_equal(pick(NULL, NULL, narrowed, 4), "1");
}

static void test_nodevfiles_step_or_job_list_maps_nothing(void **state)
{
	/* Slurm's NoDevFiles: GPUs without device files, nothing to map. */
	char *step[] = { "CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=NoDevFiles", NULL };
	char *job[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_JOB_GPUS=NoDevFiles", NULL };
	/* Without SLURM_STEP_GPUS (a batch script) the job's list is the one. */
	char *batch[] = { "CUDA_VISIBLE_DEVICES=0", "SLURM_JOB_GPUS=3", NULL };

	(void)state;
	assert_string_equal(pick(NULL, NULL, step, 4), "1");
	assert_string_equal(pick(NULL, NULL, job, 4), "0");
	assert_string_equal(pick(NULL, NULL, batch, 4), "3");
}

static void test_nvidia_visible_devices(void **state)
{
	char *image_all[] = { "NVIDIA_VISIBLE_DEVICES=all", "SLURM_STEP_GPUS=1", NULL };
	char *all[] = { "NVIDIA_VISIBLE_DEVICES=all", NULL };
	char *list[] = { "NVIDIA_VISIBLE_DEVICES=3", "CUDA_VISIBLE_DEVICES=0", NULL };
	char *none_[] = { "NVIDIA_VISIBLE_DEVICES=none", NULL };
	char *void_[] = { "NVIDIA_VISIBLE_DEVICES=void", "CUDA_VISIBLE_DEVICES=0", NULL };

	(void)state;
	/* An image's "all" is what Slurm gave, not the whole node. */
	assert_string_equal(pick(NULL, NULL, image_all, 4), "1");
	assert_string_equal(pick(NULL, NULL, all, 3), "0,1,2");
	assert_string_equal(pick(NULL, NULL, list, 4), "3");
	assert_string_equal(pick(NULL, NULL, none_, 4), "");
	assert_string_equal(pick(NULL, NULL, void_, 4), "void");
}

static void test_nothing_requested_is_unset(void **state)
{
	char *env[] = { "PATH=/bin", "CUDA_VISIBLE_DEVICES=NoDevFiles", NULL };

	(void)state;
	assert_string_equal(pick(NULL, NULL, env, 4), "unset");
}

static void test_task_mode_local_rank_picks_one(void **state)
{
	/* srun -N1 -n2 --gpus-per-node=2: both tasks see 2,3. */
	char *task1[] = { "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_GPUS=2,3",
			  "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_NUM_NODES=1", "SLURM_LOCALID=1", NULL };
	char *node[] = { "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_NUM_TASKS=2",
			 "SLURM_STEP_NUM_NODES=2", "SLURM_LOCALID=0", NULL };
	char *forced[] = { "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_NUM_TASKS=2",
			   "SLURM_STEP_NUM_NODES=1", "SLURM_LOCALID=1", "CTRUN_GPU_MODE=node", NULL };
	char *wrap[] = { "SLURM_STEP_GPUS=0,1", "SLURM_LOCALID=3", NULL };
	char *no_localid[] = { "SLURM_STEP_GPUS=0,1", NULL };

	(void)state;
	assert_string_equal(pick(NULL, NULL, task1, 4), "3");
	assert_string_equal(pick(NULL, NULL, node, 4), "2,3");
	assert_string_equal(pick(NULL, NULL, forced, 4), "2,3");
	/* More tasks than GPUs share them round-robin. */
	assert_string_equal(pick(NULL, "task", wrap, 4), "1");
	assert_non_null(strstr(pick(NULL, "task", no_localid, 4), "SLURM_LOCALID is unset"));
}

static void test_annotation_with_task_mode_picks_by_local_rank(void **state)
{
	char *env[] = { "SLURM_LOCALID=1", NULL };

	(void)state;
	assert_string_equal(pick("1,2", "task", env, 4), "2");
	assert_string_equal(pick("1,2", "node", env, 4), "1,2");
}

static void test_driver_information_file(void **state)
{
	const char *text = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\n"
			   "GPU UUID: \t GPU-5a1b2c3d-0000-1111-2222-333344445555\n"
			   "Video BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n"
			   "Device Minor: \t 7\nGPU Excluded:\t No\n";
	char uuid[80];
	long minor = -1;

	(void)state;
	assert_int_equal(hook_gpu_parse_information(text, &minor, uuid, sizeof(uuid)), 0);
	assert_int_equal(minor, 7);
	assert_string_equal(uuid, "GPU-5a1b2c3d-0000-1111-2222-333344445555");
	assert_int_equal(hook_gpu_parse_information("Model: x\n", &minor, uuid, sizeof(uuid)), -1);
}

static void test_renumbered(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(hook_gpus_renumbered(3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0,1,2");
	assert_int_equal(hook_gpus_renumbered(12, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0,1,2,3,4,5,6,7,8,9,10,11");
	assert_int_equal(hook_gpus_renumbered(12, buf, 8), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_annotation_is_used_as_is),
		cmocka_unit_test(test_ids_sort_numerically_ten_after_nine),
		cmocka_unit_test(test_unknown_gpu_is_an_error_naming_it),
		cmocka_unit_test(test_uuids_map_to_their_minor),
		cmocka_unit_test(test_cuda_visible_devices_relative_to_slurm_step_gpus),
		cmocka_unit_test(test_nodevfiles_step_or_job_list_maps_nothing),
		cmocka_unit_test(test_nvidia_visible_devices),
		cmocka_unit_test(test_nothing_requested_is_unset),
		cmocka_unit_test(test_task_mode_local_rank_picks_one),
		cmocka_unit_test(test_annotation_with_task_mode_picks_by_local_rank),
		cmocka_unit_test(test_driver_information_file),
		cmocka_unit_test(test_renumbered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
