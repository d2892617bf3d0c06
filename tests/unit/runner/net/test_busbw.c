/* Unit tests: bench arithmetic against nccl-tests' formulas.  Every
 * expected number is worked out here from the formula in nccl-tests'
 * src/<coll>.cu (GetCollByteCount, GetBw), not taken from ctrun. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "busbw.h"

/* Equal to a part in 1e9: the formulas are exact, doubles nearly so. */
static bool near(double a, double b)
{
	double d = a > b ? a - b : b - a, m = b < 0 ? -b : b;

	return d <= 1e-9 * (m + 1.0);
}
#define assert_near(a, b) assert_true(near((a), (b)))

static void test_all_reduce_busbw_is_2_n_minus_1_over_n(void **state)
{
	double alg, bus;
	/* 8 ranks, 1 Mi floats (4 MiB) in 1 ms. */
	double bytes = 1048576.0 * 4, sec = 1e-3;

	(void)state;
	coll_bandwidth(COLL_ALL_REDUCE, 1048576, 4, sec, 8, &alg, &bus);
	assert_near(alg, bytes / 1e9 / sec);
	assert_near(bus, bytes / 1e9 / sec * 2.0 * 7.0 / 8.0);
	assert_near(alg, 4.194304);
	assert_near(bus, 7.340032);
}

static void test_all_gather_algbw_counts_every_rank_block(void **state)
{
	double alg, bus;

	(void)state;
	/* nccl-tests passes count/nranks; algbw is over count * nranks. */
	coll_bandwidth(COLL_ALL_GATHER, 65536, 4, 2e-3, 4, &alg, &bus);
	assert_near(alg, 65536.0 * 4 * 4 / 1e9 / 2e-3);
	assert_near(bus, alg * 3.0 / 4.0);
}

static void test_reduce_scatter_and_alltoall_are_n_minus_1_over_n(void **state)
{
	double alg, bus;

	(void)state;
	coll_bandwidth(COLL_REDUCE_SCATTER, 1000, 8, 1e-4, 16, &alg, &bus);
	assert_near(alg, 1000.0 * 8 * 16 / 1e9 / 1e-4);
	assert_near(bus, alg * 15.0 / 16.0);
	coll_bandwidth(COLL_ALLTOALL, 1000, 8, 1e-4, 16, &alg, &bus);
	assert_near(alg, 1000.0 * 8 * 16 / 1e9 / 1e-4);
	assert_near(bus, alg * 15.0 / 16.0);
}

static void test_broadcast_busbw_equals_algbw(void **state)
{
	double alg, bus;

	(void)state;
	coll_bandwidth(COLL_BROADCAST, 4096, 2, 5e-6, 32, &alg, &bus);
	assert_near(alg, 4096.0 * 2 / 1e9 / 5e-6);
	assert_near(bus, alg);
}

static void test_bus_factor_for_two_ranks(void **state)
{
	(void)state;
	/* The 2-node socket benchmark: all_reduce moves the buffer once each way. */
	assert_near(coll_bus_factor(COLL_ALL_REDUCE, 2), 1.0);
	assert_near(coll_bus_factor(COLL_ALL_GATHER, 2), 0.5);
	assert_near(coll_bus_factor(COLL_ALLTOALL, 1), 0.0);
	assert_near(coll_bus_factor(COLL_BROADCAST, 7), 1.0);
}

static void test_zero_time_gives_zero_bandwidth(void **state)
{
	double alg = -1, bus = -1;

	(void)state;
	coll_bandwidth(COLL_ALL_REDUCE, 0, 4, 0.0, 4, &alg, &bus);
	assert_near(alg, 0.0);
	assert_near(bus, 0.0);
}

static void test_counts_follow_nccl_tests(void **state)
{
	struct coll_counts c;

	(void)state;
	/* all_reduce: send = recv = param = count. */
	coll_counts(COLL_ALL_REDUCE, 1000, 3, &c);
	assert_int_equal(c.send, 1000);
	assert_int_equal(c.recv, 1000);
	assert_int_equal(c.param, 1000);
	/* all_gather: send count/n, recv (count/n)*n, in-place input at block r. */
	coll_counts(COLL_ALL_GATHER, 1000, 3, &c);
	assert_int_equal(c.send, 333);
	assert_int_equal(c.recv, 999);
	assert_int_equal(c.param, 333);
	assert_int_equal(c.send_inplace_off, 333);
	assert_int_equal(c.recv_inplace_off, 0);
	/* reduce_scatter: the mirror image. */
	coll_counts(COLL_REDUCE_SCATTER, 1000, 3, &c);
	assert_int_equal(c.send, 999);
	assert_int_equal(c.recv, 333);
	assert_int_equal(c.param, 333);
	assert_int_equal(c.recv_inplace_off, 333);
	/* alltoall: whole buffers, per-peer count as the parameter. */
	coll_counts(COLL_ALLTOALL, 1000, 3, &c);
	assert_int_equal(c.send, 999);
	assert_int_equal(c.recv, 999);
	assert_int_equal(c.param, 333);
	coll_counts(COLL_BROADCAST, 8, 64, &c);
	assert_int_equal(c.param, 8);
}

static void test_names_and_types(void **state)
{
	enum coll c;
	enum dtype t;

	(void)state;
	assert_int_equal(coll_parse("all_gather", &c), 0);
	assert_int_equal(c, COLL_ALL_GATHER);
	assert_int_equal(coll_parse("reduce_scatter_perf", &c), 0);
	assert_int_equal(c, COLL_REDUCE_SCATTER);
	assert_int_equal(coll_parse("allreduce", &c), -1);
	assert_int_equal(dtype_parse("float", &t), 0);
	assert_int_equal(dtype_size(t), 4);
	assert_int_equal(dtype_parse("bfloat16", &t), 0);
	assert_int_equal(dtype_size(t), 2);
	/* Our enum is ncclDataType_t: ncclFloat32 = 7, ncclBfloat16 = 9. */
	assert_int_equal(DT_FLOAT, 7);
	assert_int_equal(DT_BFLOAT16, 9);
	assert_int_equal(dtype_parse("int", &t), 0);
	assert_int_equal(t, DT_INT32);
	assert_int_equal(dtype_parse("fp8", &t), -1);
	assert_true(coll_is_reduction(COLL_ALL_REDUCE));
	assert_false(coll_is_reduction(COLL_BROADCAST));
}

static void test_sizes_take_nccl_tests_suffixes(void **state)
{
	size_t v;

	(void)state;
	assert_int_equal(bench_parse_size("8", &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(bench_parse_size("64M", &v), 0);
	assert_int_equal(v, 64u << 20);
	assert_int_equal(bench_parse_size("1G", &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(bench_parse_size("1.5K", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(bench_parse_size("128m", &v), 0);
	assert_int_equal(v, 128u << 20);
	assert_int_equal(bench_parse_size("", &v), -1);
	assert_int_equal(bench_parse_size("-8", &v), -1);
	assert_int_equal(bench_parse_size("8X", &v), -1);
	assert_int_equal(bench_parse_size("M", &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_reduce_busbw_is_2_n_minus_1_over_n),
		cmocka_unit_test(test_all_gather_algbw_counts_every_rank_block),
		cmocka_unit_test(test_reduce_scatter_and_alltoall_are_n_minus_1_over_n),
		cmocka_unit_test(test_broadcast_busbw_equals_algbw),
		cmocka_unit_test(test_bus_factor_for_two_ranks),
		cmocka_unit_test(test_zero_time_gives_zero_bandwidth),
		cmocka_unit_test(test_counts_follow_nccl_tests),
		cmocka_unit_test(test_names_and_types),
		cmocka_unit_test(test_sizes_take_nccl_tests_suffixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
