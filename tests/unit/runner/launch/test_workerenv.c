/* Unit tests: the torchrun environment contract of each local worker. */
#include "ctrtest.h"
#include "workerenv.h"

/* Node 1 of 2 in node mode, 2 workers per node, GPUs 4 and 5. */
static void node_topo(struct topo *t)
{
	memset(t, 0, sizeof(*t));
	t->mode = MODE_NODE;
	t->nnodes = 2;
	t->node_rank = 1;
	t->nproc = t->local_world_size = 2;
	t->rank_base = 2;
	t->world_size = 4;
	t->master_addr = "10.0.0.1";
	t->master_port = 12345;
	t->job_id = "77";
	strv_push(&t->gpus, "4");
	strv_push(&t->gpus, "5");
}

/* Each test: default options, the node_topo above, an empty result. */
struct fx {
	struct options o;
	struct topo t;
	struct strv v;
	struct err e;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	options_init(&f->o);
	node_topo(&f->t);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	strv_free(&f->v);
	strv_free(&f->t.gpus);
	options_free(&f->o);
	free(f);
	return 0;
}

static void test_contract_for_second_worker_of_second_node(void **state)
{
	struct fx *f = *state;
	char *base[] = { "PATH=/bin", NULL };

	f->o.max_restarts = 3;
	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 1, 1, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, "RANK"), "3");
	assert_string_equal(strv_getenv(&f->v, "LOCAL_RANK"), "1");
	assert_string_equal(strv_getenv(&f->v, "WORLD_SIZE"), "4");
	assert_string_equal(strv_getenv(&f->v, "LOCAL_WORLD_SIZE"), "2");
	assert_string_equal(strv_getenv(&f->v, "GROUP_RANK"), "1");
	assert_string_equal(strv_getenv(&f->v, "GROUP_WORLD_SIZE"), "2");
	assert_string_equal(strv_getenv(&f->v, "NODE_RANK"), "1");
	assert_string_equal(strv_getenv(&f->v, "NNODES"), "2");
	assert_string_equal(strv_getenv(&f->v, "ROLE_NAME"), "default");
	assert_string_equal(strv_getenv(&f->v, "ROLE_RANK"), "3");
	assert_string_equal(strv_getenv(&f->v, "ROLE_WORLD_SIZE"), "4");
	assert_string_equal(strv_getenv(&f->v, "MASTER_ADDR"), "10.0.0.1");
	assert_string_equal(strv_getenv(&f->v, "MASTER_PORT"), "12345");
	assert_string_equal(strv_getenv(&f->v, "TORCHELASTIC_RESTART_COUNT"), "1");
	assert_string_equal(strv_getenv(&f->v, "TORCHELASTIC_MAX_RESTARTS"), "3");
	assert_string_equal(strv_getenv(&f->v, "TORCHELASTIC_RUN_ID"), "77");
	assert_string_equal(strv_getenv(&f->v, "OMP_NUM_THREADS"), "1");
	assert_string_equal(strv_getenv(&f->v, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
	/* Default: every worker sees all the node's GPUs. */
	assert_null(strv_getenv(&f->v, "CUDA_VISIBLE_DEVICES"));
}

static void test_output_is_sorted_by_key(void **state)
{
	struct fx *f = *state;
	char *base[] = { NULL };

	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 0, &f->v, &f->e), 0);
	for (size_t i = 1; i < f->v.n; i++)
		assert_true(strcmp(f->v.v[i - 1], f->v.v[i]) < 0);
}

static void test_user_values_kept_for_when_unset_defaults(void **state)
{
	struct fx *f = *state;
	char *base[] = { "OMP_NUM_THREADS=8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "RANK=99", NULL };
	struct strv full = { 0 };

	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, "OMP_NUM_THREADS"));
	assert_null(strv_getenv(&f->v, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
	assert_int_equal(workerenv_build(&f->t, &f->o, base, 0, 0, &full, &f->e), 0);
	assert_string_equal(strv_getenv(&full, "OMP_NUM_THREADS"), "8");
	assert_string_equal(strv_getenv(&full, "RANK"), "2"); /* the contract wins */
	strv_free(&full);
}

static void test_single_worker_leaves_omp_threads_alone(void **state)
{
	struct fx *f = *state;
	char *base[] = { NULL };

	f->t.nproc = f->t.local_world_size = 1;
	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, "OMP_NUM_THREADS"));
}

/* Open MPI's shared memory fails between the per-task containers of task mode. */
static void test_task_mode_image_turns_open_mpi_vader_off(void **state)
{
	struct fx *f = *state;
	char *none[] = { NULL };
	char *user[] = { "OMPI_MCA_btl=self,vader,tcp", NULL };
	const char *key = "OMPI_MCA_btl";
	char image[] = "/images/mpi.sqsh";

	f->t.mode = MODE_TASK;
	f->t.ntasks_on_node = 2;
	f->t.nproc = f->t.local_world_size = 1;
	/* Without an image, the tasks share the host's user namespace. */
	assert_int_equal(workerenv_vars(&f->t, &f->o, none, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, key));
	f->o.image = image;
	strv_free(&f->v);
	assert_int_equal(workerenv_vars(&f->t, &f->o, none, 0, 0, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, key), "^vader");
	strv_free(&f->v);
	assert_int_equal(workerenv_vars(&f->t, &f->o, user, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, key)); /* the user's choice stays */
	/* One task on the node: no neighbour to copy from. */
	f->t.ntasks_on_node = 1;
	strv_free(&f->v);
	assert_int_equal(workerenv_vars(&f->t, &f->o, none, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, key));
	f->o.image = NULL; /* not options_free's */
}

static void test_gpu_isolation_gives_each_worker_its_gpu(void **state)
{
	struct fx *f = *state;
	char *base[] = { NULL };

	f->o.gpu_isolation = true;
	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 1, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, "CUDA_VISIBLE_DEVICES"), "5");
}

static void test_user_env_overrides_and_adds(void **state)
{
	struct fx *f = *state;
	char *base[] = { NULL };

	strv_push(&f->o.env, "NCCL_DEBUG=INFO");
	strv_push(&f->o.env, "OMP_NUM_THREADS=4");
	strv_push(&f->o.env, "WEIRD=a b$(x)\n");
	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 0, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, "NCCL_DEBUG"), "INFO");
	assert_string_equal(strv_getenv(&f->v, "OMP_NUM_THREADS"), "4");
	assert_string_equal(strv_getenv(&f->v, "WEIRD"), "a b$(x)\n");
}

static void test_socket_ifname_is_the_route_to_master_unless_set(void **state)
{
	struct fx *f = *state;
	char *none[] = { NULL };
	char *user[] = { "NCCL_SOCKET_IFNAME=ib0", NULL };
	struct strv w = { 0 };

	strcpy(f->t.ifname, "eth0");
	assert_int_equal(workerenv_vars(&f->t, &f->o, none, 0, 0, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, "NCCL_SOCKET_IFNAME"), "eth0");
	assert_string_equal(strv_getenv(&f->v, "GLOO_SOCKET_IFNAME"), "eth0");
	/* The user's choice stays (it is in the inherited environment). */
	assert_int_equal(workerenv_vars(&f->t, &f->o, user, 0, 0, &w, &f->e), 0);
	assert_null(strv_getenv(&w, "NCCL_SOCKET_IFNAME"));
	assert_string_equal(strv_getenv(&w, "GLOO_SOCKET_IFNAME"), "eth0");
	strv_free(&f->v);
	strv_free(&w);
	/* Unknown route: nothing set, NCCL and gloo keep their own guess. */
	f->t.ifname[0] = '\0';
	assert_int_equal(workerenv_vars(&f->t, &f->o, none, 0, 0, &f->v, &f->e), 0);
	assert_null(strv_getenv(&f->v, "NCCL_SOCKET_IFNAME"));
	assert_null(strv_getenv(&f->v, "GLOO_SOCKET_IFNAME"));
}

/* Without a container: --env KEY is the host's value (nothing when unset),
 * under --env KEY=VALUE whatever their order. */
static void test_env_key_takes_the_host_value(void **state)
{
	struct fx *f = *state;
	char *base[] = { "CUDA_VERSION=11.0", "BOTH=host", NULL };

	strv_push(&f->o.env, "BOTH=set");
	strv_push(&f->o.env, "CUDA_VERSION");
	strv_push(&f->o.env, "BOTH");
	strv_push(&f->o.env, "UNSET_ON_HOST");
	assert_int_equal(workerenv_vars(&f->t, &f->o, base, 0, 0, &f->v, &f->e), 0);
	assert_string_equal(strv_getenv(&f->v, "CUDA_VERSION"), "11.0");
	assert_string_equal(strv_getenv(&f->v, "BOTH"), "set");
	assert_null(strv_getenv(&f->v, "UNSET_ON_HOST"));
}

/* --clean-env without a container: SLURM_*, TERM and the identity stay,
 * --env KEY brings one back, PATH is docker's default, and the contract's
 * defaults look at what is left (the host's OMP_NUM_THREADS is gone). */
static void test_clean_env_base(void **state)
{
	struct fx *f = *state;
	char *host[] = { "PATH=/host/bin", "SECRET=1", "SLURM_JOB_ID=7", "TERM=xterm",
			 "HOME=/home/u", "OMP_NUM_THREADS=8", "KEEP=me", "LANG=C.UTF-8", NULL };
	struct strv w = { 0 };

	f->o.clean_env = true;
	strv_push(&f->o.env, "KEEP");
	assert_int_equal(workerenv_build(&f->t, &f->o, host, 0, 0, &w, &f->e), 0);
	assert_null(strv_getenv(&w, "SECRET"));
	assert_null(strv_getenv(&w, "LANG"));
	assert_string_equal(strv_getenv(&w, "PATH"),
			    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	assert_string_equal(strv_getenv(&w, "SLURM_JOB_ID"), "7");
	assert_string_equal(strv_getenv(&w, "TERM"), "xterm");
	assert_string_equal(strv_getenv(&w, "HOME"), "/home/u");
	assert_string_equal(strv_getenv(&w, "KEEP"), "me");
	assert_string_equal(strv_getenv(&w, "OMP_NUM_THREADS"), "1");
	assert_string_equal(strv_getenv(&w, "RANK"), "2");
	strv_free(&w);
	/* Without --clean-env everything of the host's is there. */
	f->o.clean_env = false;
	assert_int_equal(workerenv_build(&f->t, &f->o, host, 0, 0, &w, &f->e), 0);
	assert_string_equal(strv_getenv(&w, "SECRET"), "1");
	assert_string_equal(strv_getenv(&w, "PATH"), "/host/bin");
	assert_string_equal(strv_getenv(&w, "OMP_NUM_THREADS"), "8");
	strv_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_contract_for_second_worker_of_second_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_is_sorted_by_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_values_kept_for_when_unset_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_single_worker_leaves_omp_threads_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_mode_image_turns_open_mpi_vader_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_isolation_gives_each_worker_its_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_env_overrides_and_adds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_ifname_is_the_route_to_master_unless_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_key_takes_the_host_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clean_env_base, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
