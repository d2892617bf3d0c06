/* Unit tests: launch mode, node rank, ranks and rendezvous from the Slurm
 * variables a real step sets (each test shows the ones it uses). */
#include "ctrtest.h"
#include "topology.h"

/* Each test: default options, a topology to fill, an error; all freed
 * after it, passed or not. */
struct fx {
	struct options o;
	struct topo t;
	struct err e;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	options_init(&f->o);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	topo_free(&f->t);
	options_free(&f->o);
	free(f);
	return 0;
}

static void test_node_mode_rank_from_position_in_padded_hostlist(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=3", "SLURM_STEP_NODELIST=node[01-03]",
			"SLURM_STEP_TASKS_PER_NODE=1(x3)", "SLURM_STEP_NUM_TASKS=3", "SLURM_PROCID=1",
			"SLURM_LOCALID=0", "SLURM_NODEID=1", "SLURMD_NODENAME=node02",
			"CUDA_VISIBLE_DEVICES=0,1,2,3", NULL };

	assert_int_equal(topo_detect(&f->o, env, "ignored", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.mode, MODE_NODE);
	assert_int_equal(f->t.node_rank, 1);
	assert_int_equal(f->t.nnodes, 3);
	assert_int_equal(f->t.nproc, 4);
	assert_int_equal(f->t.rank_base, 4);
	assert_int_equal(f->t.local_rank_base, 0);
	assert_int_equal(f->t.world_size, 12);
	assert_string_equal(f->t.master_addr, "node01");
	assert_int_equal(f->t.master_port, topo_derive_port(42, 3));
	assert_string_equal(f->t.job_id, "42");
}

static void test_task_mode_heterogeneous_tasks_per_node(void **state)
{
	struct fx *f = *state;
	/* 2(x3),1: nodes n1..n3 run 2 tasks, n4 runs 1; n4's task is rank 6. */
	char *env[] = { "SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-4]",
			"SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_STEP_NUM_TASKS=7", "SLURM_PROCID=6",
			"SLURM_LOCALID=0", "SLURM_NODEID=3", "SLURMD_NODENAME=n4", NULL };
	char *env2[] = { "SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-4]",
			 "SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_PROCID=3", "SLURM_LOCALID=1",
			 "SLURMD_NODENAME=n2", NULL };

	assert_int_equal(topo_detect(&f->o, env, "x", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.mode, MODE_TASK);
	assert_int_equal(f->t.node_rank, 3);
	assert_int_equal(f->t.nproc, 1);
	assert_int_equal(f->t.rank_base, 6);
	assert_int_equal(f->t.local_world_size, 1);
	assert_int_equal(f->t.world_size, 7);
	topo_free(&f->t);
	assert_int_equal(topo_detect(&f->o, env2, "x", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.node_rank, 1);
	assert_int_equal(f->t.rank_base, 3);
	assert_int_equal(f->t.local_rank_base, 1);
	assert_int_equal(f->t.local_world_size, 2);
	assert_int_equal(f->t.world_size, 7); /* summed from the counts */
}

static void test_task_mode_without_procid_uses_rank_base(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-4]",
			"SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_LOCALID=1", "SLURMD_NODENAME=n3", NULL };

	assert_int_equal(topo_detect(&f->o, env, "x", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.rank_base, 5);
}

static void test_unknown_hostname_falls_back_to_nodeid(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=a,b",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURM_NODEID=1", NULL };
	char *env2[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=a,b",
			 "SLURM_STEP_TASKS_PER_NODE=1(x2)", NULL };

	assert_int_equal(topo_detect(&f->o, env, "c.example", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.node_rank, 1);
	topo_free(&f->t);
	assert_int_equal(topo_detect(&f->o, env2, "c", 0, &f->t, &f->e), -1);
	assert_int_equal(f->e.code, EXIT_CTRUN);
	assert_non_null(strstr(f->e.msg, "'c'"));
}

static void test_malformed_nodelist_is_a_ctrun_error(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-",
			"SLURM_STEP_TASKS_PER_NODE=1", NULL };

	assert_int_equal(topo_detect(&f->o, env, "n1", 0, &f->t, &f->e), -1);
	assert_int_equal(f->e.code, EXIT_CTRUN);
}

static void test_tasks_per_node_must_match_nodelist(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-3]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURMD_NODENAME=n1", NULL };

	assert_int_equal(topo_detect(&f->o, env, "n1", 0, &f->t, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "1(x2)"));
}

static void test_node_mode_refuses_several_tasks_on_a_node(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-2]",
			"SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURMD_NODENAME=n1", NULL };

	f->o.mode = MODE_NODE;
	assert_int_equal(topo_detect(&f->o, env, "n1", 0, &f->t, &f->e), -1);
	assert_int_equal(f->e.code, EXIT_USAGE);
	assert_non_null(strstr(f->e.msg, "--mode task"));
}

static void test_batch_mode_when_job_but_no_step(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=9", "SLURM_JOB_NODELIST=gpu[1-4]", "SLURM_TASKS_PER_NODE=8(x4)",
			NULL };

	assert_int_equal(topo_detect(&f->o, env, "gpu1", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.mode, MODE_BATCH);
	assert_int_equal(f->t.nnodes, 4);
	assert_string_equal(f->t.master_addr, "gpu1");
}

/* Slurm 26.05's batch script: SLURM_STEP_ID=-5 (SLURM_BATCH_SCRIPT printed
 * with %d), the same in SLURM_STEPID; salloc's interactive step is -6. */
static void test_batch_mode_in_slurms_special_steps(void **state)
{
	struct fx *f = *state;
	char *batch[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=-5", "SLURM_STEPID=-5",
			  "SLURM_JOB_NODELIST=gpu[1-2]", "SLURM_TASKS_PER_NODE=8(x2)", NULL };
	char *interactive[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=-6", "SLURM_JOB_NODELIST=gpu[1-2]",
				NULL };
	char *unsigned_batch[] = { "SLURM_JOB_ID=9", "SLURM_STEP_ID=4294967291",
				   "SLURM_JOB_NODELIST=gpu[1-2]", NULL };
	char *only_stepid[] = { "SLURM_JOB_ID=9", "SLURM_STEPID=-4", "SLURM_JOB_NODELIST=gpu[1-2]",
				NULL };
	char **envs[] = { batch, interactive, unsigned_batch, only_stepid };

	for (size_t i = 0; i < sizeof(envs) / sizeof(*envs); i++) {
		assert_int_equal(topo_detect(&f->o, envs[i], "gpu1", 0, &f->t, &f->e), 0);
		assert_int_equal(f->t.mode, MODE_BATCH);
		assert_null(f->t.step_id);
		assert_int_equal(f->t.nnodes, 2);
		topo_free(&f->t);
	}
	assert_true(topo_special_step("-5"));
	assert_true(topo_special_step("4294967290"));
	assert_false(topo_special_step("0"));
	assert_false(topo_special_step("12"));
	assert_false(topo_special_step("-17"));
	assert_false(topo_special_step("x"));
}

/* A real step given only as SLURM_STEPID (the old name) is still a step. */
static void test_step_from_the_old_variable_name(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEPID=3", "SLURM_STEP_NODELIST=n[1-2]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURM_PROCID=1", "SLURM_NODEID=1", NULL };

	assert_int_equal(topo_detect(&f->o, env, "n2", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.mode, MODE_NODE);
	assert_string_equal(f->t.step_id, "3");
	assert_int_equal(f->t.master_port, topo_derive_port(42, 3));
}

static void test_standalone_counts_gpu_device_files(void **state)
{
	struct fx *f = *state;
	char *env[] = { "PATH=/bin", NULL };

	assert_int_equal(topo_detect(&f->o, env, "laptop", 2, &f->t, &f->e), 0);
	assert_int_equal(f->t.mode, MODE_STANDALONE);
	assert_int_equal(f->t.nproc, 2);
	assert_int_equal(f->t.world_size, 2);
	assert_string_equal(f->t.master_addr, "127.0.0.1");
	assert_int_equal(f->t.master_port, 0); /* picked free at launch */
	assert_string_equal(f->t.job_id, "none");
	topo_free(&f->t);
	assert_int_equal(topo_detect(&f->o, env, "laptop", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.nproc, 1);
}

static void test_device_files_do_not_count_inside_a_job(void **state)
{
	struct fx *f = *state;
	/* A GPU node's /dev/nvidiaN exist even when the job got no GPUs. */
	char *env[] = { "SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=g1",
			"SLURM_STEP_TASKS_PER_NODE=1", "SLURMD_NODENAME=g1", NULL };

	assert_int_equal(topo_detect(&f->o, env, "g1", 4, &f->t, &f->e), 0);
	assert_int_equal(f->t.gpus.n, 0);
	assert_int_equal(f->t.nproc, 1);
}

static void test_overrides_win_over_slurm(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[1-2]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURMD_NODENAME=n1", NULL };

	f->o.nproc_per_node = strdup("3");
	f->o.master_port = 31000;
	f->o.master_addr = strdup("10.1.2.3");
	assert_int_equal(topo_detect(&f->o, env, "n1", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.nproc, 3);
	assert_int_equal(f->t.world_size, 6);
	assert_int_equal(f->t.master_port, 31000);
	assert_string_equal(f->t.master_addr, "10.1.2.3");
}

static void test_nproc_gpu_without_gpus_is_an_error(void **state)
{
	struct fx *f = *state;
	char *env[] = { NULL };

	f->o.nproc_per_node = strdup("gpu");
	assert_int_equal(topo_detect(&f->o, env, "h", 0, &f->t, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "no GPU"));
}

static void test_derived_ports_differ_between_neighbouring_jobs_and_steps(void **state)
{
	(void)state;
	for (unsigned long j = 1000; j < 2000; j++) {
		long p = topo_derive_port(j, 0);

		assert_true(p >= 10000 && p < 32000);
		assert_int_not_equal(p, topo_derive_port(j + 1, 0));
		assert_int_not_equal(p, topo_derive_port(j, 1));
	}
}

/* A spare (n4) took the lost n2's rank: the batch ctrun's order, not Slurm's. */
static void test_batch_node_order_gives_the_spare_the_lost_rank(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=1", "SLURM_STEP_NODELIST=n[1,3-4]",
			"SLURM_STEP_TASKS_PER_NODE=1(x3)", "SLURMD_NODENAME=n4", "SLURM_NODEID=2",
			"CTRUN_BATCH_NODES=n1,n4,n3", "CUDA_VISIBLE_DEVICES=0,1", NULL };

	assert_int_equal(topo_detect(&f->o, env, "n4", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.node_rank, 1);
	assert_int_equal(f->t.rank_base, 2);
	assert_int_equal(f->t.world_size, 6);
	assert_string_equal(f->t.master_addr, "n1");
	assert_string_equal(f->t.nodes.v[2], "n3");
}

/* The order names a node the step does not have (or misses one): refused. */
static void test_batch_node_order_must_be_the_steps_nodes(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=1", "SLURM_STEP_NODELIST=n[1,3]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURMD_NODENAME=n3",
			"CTRUN_BATCH_NODES=n1,n2", NULL };
	char *dup[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=1", "SLURM_STEP_NODELIST=n[1,3]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURMD_NODENAME=n3",
			"CTRUN_BATCH_NODES=n3,n3", NULL };

	assert_int_equal(topo_detect(&f->o, env, "n3", 0, &f->t, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "CTRUN_BATCH_NODES='n1,n2' is not an order of the step's"));
	topo_free(&f->t);
	assert_int_equal(topo_detect(&f->o, dup, "n3", 0, &f->t, &f->e), -1);
}

/* --nnodes MIN:MAX: in a step the step's node count; outside Slurm refused. */
static void test_elastic_nnodes_in_a_step_and_outside(void **state)
{
	struct fx *f = *state;
	char *env[] = { "SLURM_JOB_ID=42", "SLURM_STEP_ID=2", "SLURM_STEP_NODELIST=n[1,3]",
			"SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURMD_NODENAME=n3", NULL };
	char *none[] = { NULL };

	f->o.nnodes_min = 1;
	f->o.nnodes_max = 3;
	assert_int_equal(topo_detect(&f->o, env, "n3", 0, &f->t, &f->e), 0);
	assert_int_equal(f->t.nnodes, 2);
	assert_int_equal(f->t.node_rank, 1);
	topo_free(&f->t);
	assert_int_equal(topo_detect(&f->o, none, "h", 0, &f->t, &f->e), -1);
	assert_int_equal(f->e.code, EXIT_USAGE);
	assert_non_null(strstr(f->e.msg, "--nnodes 1:3: an elastic node count needs a batch"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_mode_rank_from_position_in_padded_hostlist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_mode_heterogeneous_tasks_per_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_mode_without_procid_uses_rank_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_hostname_falls_back_to_nodeid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_nodelist_is_a_ctrun_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tasks_per_node_must_match_nodelist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_mode_refuses_several_tasks_on_a_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_mode_when_job_but_no_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_mode_in_slurms_special_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_from_the_old_variable_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_standalone_counts_gpu_device_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_files_do_not_count_inside_a_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrides_win_over_slurm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nproc_gpu_without_gpus_is_an_error, setup, teardown),
		cmocka_unit_test(test_derived_ports_differ_between_neighbouring_jobs_and_steps),
		cmocka_unit_test_setup_teardown(test_batch_node_order_gives_the_spare_the_lost_rank, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_node_order_must_be_the_steps_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_elastic_nnodes_in_a_step_and_outside, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
