/* Unit tests: Slurm's GPU lists (slurmgpu.h): splitting, NoDevFiles,
 * CUDA_VISIBLE_DEVICES absolute or relative to SLURM_STEP_GPUS, the pick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "slurmgpu.h"

/* The entries of v as "a,b,c". */
static const char *joined(const struct strv *v)
{
	static char out[512];
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < v->n; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s", i ? "," : "",
					v->v[i]);
	return out;
}

/* slurmgpu_host of two lists as Slurm writes them; "=" marks a copy,
 * "~" a mapping, before the result. */
static const char *host(const char *visible, const char *step)
{
	static char out[600];
	struct strv cv = { 0 }, sv = { 0 }, ids = { 0 };
	int r;

	assert_int_equal(slurmgpu_split(visible, &cv), 0);
	assert_int_equal(slurmgpu_split(step, &sv), 0);
	r = slurmgpu_host(&cv, &sv, &ids);
	assert_true(r == 0 || r == 1);
	snprintf(out, sizeof(out), "%c%s", r ? '~' : '=', joined(&ids));
	strv_free(&cv);
	strv_free(&sv);
	strv_free(&ids);
	return out;
}

static void test_split_skips_empty_entries(void **state)
{
	struct strv v = { 0 };

	(void)state;
	assert_int_equal(slurmgpu_split("0,,2,", &v), 0);
	assert_string_equal(joined(&v), "0,2");
	strv_free(&v);
	assert_int_equal(slurmgpu_split("GPU-aa00-11,MIG-bb/1/2", &v), 0);
	assert_string_equal(joined(&v), "GPU-aa00-11,MIG-bb/1/2");
	strv_free(&v);
}

static void test_nodevfiles_empty_and_unset_name_no_gpu(void **state)
{
	struct strv v = { 0 };

	(void)state;
	assert_false(slurmgpu_names_gpus(NULL));
	assert_false(slurmgpu_names_gpus(""));
	assert_false(slurmgpu_names_gpus("NoDevFiles"));
	assert_true(slurmgpu_names_gpus("0"));
	assert_int_equal(slurmgpu_split(NULL, &v), 0);
	assert_int_equal(slurmgpu_split("", &v), 0);
	assert_int_equal(slurmgpu_split("NoDevFiles", &v), 0);
	assert_int_equal(v.n, 0);
}

static void test_absolute_ids_are_copied(void **state)
{
	(void)state;
	assert_string_equal(host("2,3", "2,3"), "=2,3");
	assert_string_equal(host("3", "2,3"), "=3");
	/* 1 is both a host id of the step and a position in it: absolute. */
	assert_string_equal(host("1", "1,2"), "=1");
}

static void test_relative_ids_map_through_the_step(void **state)
{
	(void)state;
	/* ConstrainDevices: 0,1 inside the cgroup of a step with GPUs 2,3. */
	assert_string_equal(host("0,1", "2,3"), "~2,3");
	assert_string_equal(host("1,0", "6,7"), "~7,6");
	assert_string_equal(host("1", "4,5"), "~5");
	/* 0 is not among 1,2 and every entry is a position. */
	assert_string_equal(host("0,1", "1,2"), "~1,2");
	assert_string_equal(host("0", "GPU-aa,GPU-bb"), "~GPU-aa");
}

static void test_no_step_list_means_host_ids(void **state)
{
	(void)state;
	assert_string_equal(host("0,1", NULL), "=0,1");
	assert_string_equal(host("0,1", ""), "=0,1");
	assert_string_equal(host("0,1", "NoDevFiles"), "=0,1");
	assert_string_equal(host("", "2,3"), "=");
}

static void test_out_of_range_or_not_positions_are_copied(void **state)
{
	(void)state;
	/* 2 is no position in a two-GPU list: the whole list stays as is. */
	assert_string_equal(host("0,2", "4,5"), "=0,2");
	assert_string_equal(host("5", "1,2"), "=5");
	/* UUIDs, MIG names and signed or padded numbers are no positions. */
	assert_string_equal(host("GPU-aa", "2,3"), "=GPU-aa");
	assert_string_equal(host("0,GPU-aa", "2,3"), "=0,GPU-aa");
	assert_string_equal(host("MIG-aa/1/0", "2,3"), "=MIG-aa/1/0");
	assert_string_equal(host("+1", "2,3"), "=+1");
	assert_string_equal(host("-1", "2,3"), "=-1");
}

static void test_pick_is_local_rank_modulo_count(void **state)
{
	(void)state;
	assert_int_equal(slurmgpu_pick(0, 4), 0);
	assert_int_equal(slurmgpu_pick(3, 4), 3);
	assert_int_equal(slurmgpu_pick(5, 4), 1);
	assert_int_equal(slurmgpu_pick(3, 2), 1);
	assert_int_equal(slurmgpu_pick(7, 1), 0);
	/* No rank known, or no GPU: the first. */
	assert_int_equal(slurmgpu_pick(-1, 4), 0);
	assert_int_equal(slurmgpu_pick(3, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_skips_empty_entries),
		cmocka_unit_test(test_nodevfiles_empty_and_unset_name_no_gpu),
		cmocka_unit_test(test_absolute_ids_are_copied),
		cmocka_unit_test(test_relative_ids_map_through_the_step),
		cmocka_unit_test(test_no_step_list_means_host_ids),
		cmocka_unit_test(test_out_of_range_or_not_positions_are_copied),
		cmocka_unit_test(test_pick_is_local_rank_modulo_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
