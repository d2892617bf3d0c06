/* Unit tests: the torchrun environment contract of each local worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

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

static void test_contract_for_second_worker_of_second_node(void **state)
{
	char *base[] = { "PATH=/bin", NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	o.max_restarts = 3;
	node_topo(&t);
	assert_int_equal(workerenv_vars(&t, &o, base, 1, 1, &v, &e), 0);
	assert_string_equal(strv_getenv(&v, "RANK"), "3");
	assert_string_equal(strv_getenv(&v, "LOCAL_RANK"), "1");
	assert_string_equal(strv_getenv(&v, "WORLD_SIZE"), "4");
	assert_string_equal(strv_getenv(&v, "LOCAL_WORLD_SIZE"), "2");
	assert_string_equal(strv_getenv(&v, "GROUP_RANK"), "1");
	assert_string_equal(strv_getenv(&v, "GROUP_WORLD_SIZE"), "2");
	assert_string_equal(strv_getenv(&v, "NODE_RANK"), "1");
	assert_string_equal(strv_getenv(&v, "NNODES"), "2");
	assert_string_equal(strv_getenv(&v, "ROLE_NAME"), "default");
	assert_string_equal(strv_getenv(&v, "ROLE_RANK"), "3");
	assert_string_equal(strv_getenv(&v, "ROLE_WORLD_SIZE"), "4");
	assert_string_equal(strv_getenv(&v, "MASTER_ADDR"), "10.0.0.1");
	assert_string_equal(strv_getenv(&v, "MASTER_PORT"), "12345");
	assert_string_equal(strv_getenv(&v, "TORCHELASTIC_RESTART_COUNT"), "1");
	assert_string_equal(strv_getenv(&v, "TORCHELASTIC_MAX_RESTARTS"), "3");
	assert_string_equal(strv_getenv(&v, "TORCHELASTIC_RUN_ID"), "77");
	assert_string_equal(strv_getenv(&v, "OMP_NUM_THREADS"), "1");
	assert_string_equal(strv_getenv(&v, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
	/* Default: every worker sees all the node's GPUs. */
	assert_null(strv_getenv(&v, "CUDA_VISIBLE_DEVICES"));
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_output_is_sorted_by_key(void **state)
{
	char *base[] = { NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	node_topo(&t);
	assert_int_equal(workerenv_vars(&t, &o, base, 0, 0, &v, &e), 0);
	for (size_t i = 1; i < v.n; i++)
		assert_true(strcmp(v.v[i - 1], v.v[i]) < 0);
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_user_values_kept_for_when_unset_defaults(void **state)
{
	char *base[] = { "OMP_NUM_THREADS=8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "RANK=99", NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 }, full = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	node_topo(&t);
	assert_int_equal(workerenv_vars(&t, &o, base, 0, 0, &v, &e), 0);
	assert_null(strv_getenv(&v, "OMP_NUM_THREADS"));
	assert_null(strv_getenv(&v, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
	assert_int_equal(workerenv_build(&t, &o, base, 0, 0, &full, &e), 0);
	assert_string_equal(strv_getenv(&full, "OMP_NUM_THREADS"), "8");
	assert_string_equal(strv_getenv(&full, "RANK"), "2"); /* the contract wins */
	strv_free(&v);
	strv_free(&full);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_single_worker_leaves_omp_threads_alone(void **state)
{
	char *base[] = { NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	node_topo(&t);
	t.nproc = t.local_world_size = 1;
	assert_int_equal(workerenv_vars(&t, &o, base, 0, 0, &v, &e), 0);
	assert_null(strv_getenv(&v, "OMP_NUM_THREADS"));
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_gpu_isolation_gives_each_worker_its_gpu(void **state)
{
	char *base[] = { NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	o.gpu_isolation = true;
	node_topo(&t);
	assert_int_equal(workerenv_vars(&t, &o, base, 0, 1, &v, &e), 0);
	assert_string_equal(strv_getenv(&v, "CUDA_VISIBLE_DEVICES"), "5");
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_user_env_overrides_and_adds(void **state)
{
	char *base[] = { NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	strv_push(&o.env, "NCCL_DEBUG=INFO");
	strv_push(&o.env, "OMP_NUM_THREADS=4");
	strv_push(&o.env, "WEIRD=a b$(x)\n");
	node_topo(&t);
	assert_int_equal(workerenv_vars(&t, &o, base, 0, 0, &v, &e), 0);
	assert_string_equal(strv_getenv(&v, "NCCL_DEBUG"), "INFO");
	assert_string_equal(strv_getenv(&v, "OMP_NUM_THREADS"), "4");
	assert_string_equal(strv_getenv(&v, "WEIRD"), "a b$(x)\n");
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

static void test_socket_ifname_is_the_route_to_master_unless_set(void **state)
{
	char *none[] = { NULL };
	char *user[] = { "NCCL_SOCKET_IFNAME=ib0", NULL };
	struct options o;
	struct topo t;
	struct strv v = { 0 }, w = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	node_topo(&t);
	strcpy(t.ifname, "eth0");
	assert_int_equal(workerenv_vars(&t, &o, none, 0, 0, &v, &e), 0);
	assert_string_equal(strv_getenv(&v, "NCCL_SOCKET_IFNAME"), "eth0");
	assert_string_equal(strv_getenv(&v, "GLOO_SOCKET_IFNAME"), "eth0");
	/* The user's choice stays (it is in the inherited environment). */
	assert_int_equal(workerenv_vars(&t, &o, user, 0, 0, &w, &e), 0);
	assert_null(strv_getenv(&w, "NCCL_SOCKET_IFNAME"));
	assert_string_equal(strv_getenv(&w, "GLOO_SOCKET_IFNAME"), "eth0");
	strv_free(&v);
	strv_free(&w);
	/* Unknown route: nothing set, NCCL and gloo keep their own guess. */
	t.ifname[0] = '\0';
	assert_int_equal(workerenv_vars(&t, &o, none, 0, 0, &v, &e), 0);
	assert_null(strv_getenv(&v, "NCCL_SOCKET_IFNAME"));
	assert_null(strv_getenv(&v, "GLOO_SOCKET_IFNAME"));
	strv_free(&v);
	strv_free(&t.gpus);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract_for_second_worker_of_second_node),
		cmocka_unit_test(test_output_is_sorted_by_key),
		cmocka_unit_test(test_user_values_kept_for_when_unset_defaults),
		cmocka_unit_test(test_single_worker_leaves_omp_threads_alone),
		cmocka_unit_test(test_gpu_isolation_gives_each_worker_its_gpu),
		cmocka_unit_test(test_user_env_overrides_and_adds),
		cmocka_unit_test(test_socket_ifname_is_the_route_to_master_unless_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
