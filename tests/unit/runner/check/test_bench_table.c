/* Unit tests: `ctrun bench` output is nccl-tests' (the printf formats of
 * nccl-tests 2.17+ are spelled out here and compared byte for byte), the
 * JSON document, the flag parser, and the data check (a reference
 * collective computed here from every rank's input must verify clean). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench.h"

/* Runs a printer into a string. */
#define CAPTURE(buf, call)                                        \
	do {                                                      \
		size_t len_ = 0;                                  \
		FILE *f = open_memstream(&(buf), &len_);          \
		assert_non_null(f);                               \
		call;                                             \
		fclose(f);                                        \
	} while (0)

static void test_float_format_keeps_the_column_width(void **state)
{
	char s[32];

	(void)state;
	bench_float_str(12.3456, 7, s, sizeof(s));
	assert_string_equal(s, "  12.35");
	bench_float_str(12345.67, 7, s, sizeof(s));
	assert_string_equal(s, "12345.7");
	bench_float_str(123456.7, 7, s, sizeof(s));
	assert_string_equal(s, " 123457");
	bench_float_str(123456789.0, 7, s, sizeof(s));
	assert_string_equal(s, "1.2e+08");
	bench_float_str(0.0, 6, s, sizeof(s));
	assert_string_equal(s, "  0.00");
	bench_float_str(1234.56, 6, s, sizeof(s));
	assert_string_equal(s, "1234.6");
}

static void test_row_matches_nccl_tests_layout(void **state)
{
	struct bench_row r = { .size = 33554432, .count = 8388608, .type = DT_FLOAT, .redop = "sum",
			       .root = -1, .time_us = { 1537.62, 1538.74 },
			       .algbw = { 21.82, 21.81 }, .busbw = { 21.82, 21.81 },
			       .wrong = { 0, 0 } };
	char want[512], *got = NULL;

	(void)state;
	/* nccl-tests: "%12li  %12li  %8s  %6s  %6s" then "  %7s  %6s  %6s  %6g" twice. */
	snprintf(want, sizeof(want), "%12li  %12li  %8s  %6s  %6s  %7s  %6s  %6s  %6g  %7s  %6s  "
		 "%6s  %6g\n", 33554432L, 8388608L, "float", "sum", "    -1", "1537.62", " 21.82",
		 " 21.82", 0.0, "1538.74", " 21.81", " 21.81", 0.0);
	CAPTURE(got, bench_print_row(f, &r));
	assert_string_equal(got, want);
	assert_string_equal(got, "    33554432       8388608     float     sum      -1  1537.62   21.82"
				 "   21.82       0  1538.74   21.81   21.81       0\n");
	free(got);
}

static void test_row_shows_unchecked_as_na(void **state)
{
	struct bench_row r = { .size = 1048576, .count = 16384, .type = DT_FLOAT, .redop = "none",
			       .root = -1, .time_us = { 996.7, 1007.1 }, .algbw = { 1.05, 1.04 },
			       .busbw = { 0.99, 0.98 }, .wrong = { 0, -1 } };
	char *got = NULL;

	(void)state;
	CAPTURE(got, bench_print_row(f, &r));
	/* An alltoall_perf line: in place is not checked.  (nccl-tests before
	 * 2.17 printed times of 100 us and more with one decimal; 2.17's
	 * getFloatStr gives two wherever they fit, and so do we.) */
	assert_string_equal(got, "     1048576         16384     float    none      -1   996.70    1.05"
				 "    0.99       0  1007.10    1.04    0.98    N/A\n");
	free(got);
}

static void test_header_and_footer_match_nccl_tests(void **state)
{
	char want[1024], *got = NULL;
	int n;

	(void)state;
	n = snprintf(want, sizeof(want), "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place      "
		     "                 in-place          \n", "", "", "", "", "");
	n += snprintf(want + n, sizeof(want) - (size_t)n, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  "
		      "%6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type", "redop", "root",
		      "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, "");
	snprintf(want + n, sizeof(want) - (size_t)n, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  "
		 "%6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
		 "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "");
	CAPTURE(got, bench_print_table_head(f, COLL_ALL_REDUCE));
	assert_string_equal(got, want);
	free(got);
	CAPTURE(got, bench_print_footer(f, COLL_ALL_REDUCE, 0, 14.9966, NULL));
	assert_string_equal(got, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 14.9966 \n#\n"
				 "# Collective test concluded: all_reduce_perf\n#\n");
	free(got);
	/* The network beside the bandwidth, on a line of its own. */
	CAPTURE(got, bench_print_footer(f, COLL_ALL_REDUCE, 0, 14.9966, "IB, GDRDMA"));
	assert_string_equal(got, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 14.9966 \n"
				 "# Transport            : IB, GDRDMA\n#\n"
				 "# Collective test concluded: all_reduce_perf\n#\n");
	free(got);
	CAPTURE(got, bench_print_footer(f, COLL_ALLTOALL, 3, 1.5, NULL));
	assert_non_null(strstr(got, "# Out of bounds values : 3 FAILED\n"));
	assert_non_null(strstr(got, "concluded: alltoall_perf\n"));
	free(got);
}

static void test_preamble_lists_devices_like_nccl_tests(void **state)
{
	struct bench_params p;
	struct err e = { 0 };
	struct bench_device d[2] = {
		{ .rank = 0, .pid = 4242, .device = 0, .host = "gpu01", .bus = "0000:07:00",
		  .name = "NVIDIA H100 80GB HBM3" },
		{ .rank = 1, .pid = 4243, .device = -1, .host = "cpu01", .bus = "-",
		  .name = "CPU (socket backend)" },
	};
	char *words[] = { "-b", "8", "-e", "128M", "-f", "2" }, *got = NULL;

	(void)state;
	assert_int_equal(bench_parse_args(words, 6, &p, &e), 0);
	CAPTURE(got, bench_print_preamble(f, &p, "nccl", d, 2));
	assert_non_null(strstr(got, "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) "
				    "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"));
	assert_non_null(strstr(got, "#\n# Using devices\n"));
	assert_non_null(strstr(got, "#  Rank  0 Group  0 Pid   4242 on      gpu01 device  0 "
				    "[0000:07:00] NVIDIA H100 80GB HBM3\n"));
	assert_non_null(strstr(got, "#  Rank  1 Group  0 Pid   4243 on      cpu01 device -1 [-] "));
	free(got);
}

static void test_json_document(void **state)
{
	struct bench_params p;
	struct err e = { 0 };
	struct bench_device d = { .rank = 0, .pid = 1, .device = -1, .host = "n1", .bus = "-",
				  .name = "CPU" };
	struct bench_row r = { .size = 64, .count = 16, .type = DT_FLOAT, .redop = "sum", .root = -1,
			       .time_us = { 10, 11 }, .algbw = { 6.4, 5.8 }, .busbw = { 9.6, 8.7 },
			       .wrong = { 0, -1 } };
	json_object *doc, *test, *parsed, *v, *res, *row, *oop, *ip;
	char *words[] = { "all_gather", "-b", "64" };

	(void)state;
	assert_int_equal(bench_parse_args(words, 3, &p, &e), 0);
	doc = bench_json_doc(&p, "socket", 4, &d, 1);
	test = bench_json_test(doc, COLL_ALL_GATHER);
	bench_json_row(test, &r);
	bench_json_summary(doc, test, 2, 9.15, "Socket");
	/* Round trip through text, as a consumer reads it. */
	parsed = json_tokener_parse(json_object_to_json_string(doc));
	assert_non_null(parsed);
	assert_true(json_object_object_get_ex(parsed, "backend", &v));
	assert_string_equal(json_object_get_string(v), "socket");
	assert_true(json_object_object_get_ex(parsed, "nranks", &v));
	assert_int_equal(json_object_get_int(v), 4);
	assert_true(json_object_object_get_ex(parsed, "okay", &v));
	assert_false(json_object_get_boolean(v)); /* 2 wrong elements */
	assert_true(json_object_object_get_ex(parsed, "tests", &v));
	test = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(test, "collective", &v));
	assert_string_equal(json_object_get_string(v), "all_gather");
	assert_true(json_object_object_get_ex(test, "results", &res));
	row = json_object_array_get_idx(res, 0);
	assert_true(json_object_object_get_ex(row, "size", &v));
	assert_int_equal(json_object_get_int(v), 64);
	assert_true(json_object_object_get_ex(row, "out_of_place", &oop));
	assert_true(json_object_object_get_ex(oop, "bus_bw", &v));
	assert_true(json_object_get_double(v) > 9.59 && json_object_get_double(v) < 9.61);
	assert_true(json_object_object_get_ex(oop, "nwrong", &v));
	assert_int_equal(json_object_get_int(v), 0);
	assert_true(json_object_object_get_ex(row, "in_place", &ip));
	assert_true(json_object_object_get_ex(ip, "nwrong", &v));
	assert_null(v); /* N/A */
	assert_true(json_object_object_get_ex(test, "average_bus_bandwidth", &v));
	assert_true(json_object_object_get_ex(v, "bandwidth", &v));
	assert_true(json_object_get_double(v) > 9.14 && json_object_get_double(v) < 9.16);
	assert_true(json_object_object_get_ex(test, "transport", &v));
	assert_string_equal(json_object_get_string(v), "Socket");
	json_object_put(parsed);
	json_object_put(doc);
}

static void test_flags_have_nccl_tests_meanings(void **state)
{
	struct bench_params p;
	struct err e = { 0 };
	char *words[] = { "-b", "8", "-e", "64M", "-f", "2", "-n", "7", "-w", "1", "-c", "0",
			  "-d", "double", "all_gather", "--backend", "socket", "--json", "alltoall" };
	char *none[] = { NULL };
	char *bad[] = { "-b", "1G", "-e", "1M" };
	char *unknown[] = { "-g", "8" };

	(void)state;
	assert_int_equal(bench_parse_args(none, 0, &p, &e), 0);
	/* nccl-tests' defaults. */
	assert_int_equal(p.minbytes, 32u << 20);
	assert_int_equal(p.maxbytes, 32u << 20);
	assert_int_equal(p.stepbytes, 1u << 20);
	assert_int_equal(p.stepfactor, 1);
	assert_int_equal(p.iters, 20);
	assert_int_equal(p.warmup, 5);
	assert_int_equal(p.check, 1);
	assert_int_equal(p.type, DT_FLOAT);
	assert_int_equal(p.ncolls, 1);
	assert_int_equal(p.colls[0], COLL_ALL_REDUCE);
	assert_int_equal(bench_parse_args(words, sizeof(words) / sizeof(*words), &p, &e), 0);
	assert_int_equal(p.minbytes, 8);
	assert_int_equal(p.maxbytes, 64u << 20);
	assert_int_equal(p.stepfactor, 2);
	assert_int_equal(p.iters, 7);
	assert_int_equal(p.warmup, 1);
	assert_int_equal(p.check, 0);
	assert_int_equal(p.type, DT_DOUBLE);
	assert_int_equal(p.backend, BACKEND_SOCKET);
	assert_true(p.json);
	assert_int_equal(p.ncolls, 2);
	assert_int_equal(p.colls[0], COLL_ALL_GATHER);
	assert_int_equal(p.colls[1], COLL_ALLTOALL);
	assert_int_equal(bench_parse_args(bad, 4, &p, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(bench_parse_args(unknown, 2, &p, &e), -1);
	assert_non_null(strstr(e.msg, "-g"));
}

/* Every rank's input, the collective done by hand, then bench_verify. */
static void reference(enum coll c, enum dtype t, long n, size_t count, long rep, long root)
{
	struct coll_counts cc;
	size_t es = dtype_size(t);
	unsigned char *in, *out;

	coll_counts(c, count, (size_t)n, &cc);
	in = calloc((size_t)n, cc.send * es + 1);
	out = calloc(1, cc.recv * es + 1);
	for (long r = 0; r < n; r++)
		bench_fill(in + (size_t)r * cc.send * es, 0, cc.send, c, t, r, n, rep);
	for (long me = 0; me < n; me++) {
		size_t per = cc.param;

		for (size_t i = 0; i < cc.recv; i++) {
			uint64_t acc = 0;

			switch (c) {
			case COLL_ALL_REDUCE:
			case COLL_REDUCE_SCATTER:
				/* Integer types only here: add the stored values. */
				for (long r = 0; r < n; r++) {
					uint64_t x = 0;

					memcpy(&x, in + ((size_t)r * cc.send +
							 (c == COLL_REDUCE_SCATTER ? (size_t)me * per : 0) + i) * es, es);
					acc += x;
				}
				memcpy(out + i * es, &acc, es);
				break;
			case COLL_ALL_GATHER:
				memcpy(out + i * es, in + ((i / per) * cc.send + i % per) * es, es);
				break;
			case COLL_BROADCAST:
				memcpy(out + i * es, in + ((size_t)root * cc.send + i) * es, es);
				break;
			case COLL_ALLTOALL:
				memcpy(out + i * es, in + ((i / per) * cc.send + (size_t)me * per + i % per) * es, es);
				break;
			case COLL_COUNT:
				break;
			}
		}
		assert_int_equal(bench_verify(out, 0, cc.recv, c, t, me, n, per, rep, root), 0);
		/* A piece of it checked on its own, as the GPU path does in stages. */
		if (cc.recv > 10)
			assert_int_equal(bench_verify(out + 3 * es, 3, 5, c, t, me, n, per, rep, root), 0);
		/* One corrupted element is one wrong element. */
		if (cc.recv > 0) {
			out[(cc.recv / 2) * es] ^= 0x40;
			assert_int_equal(bench_verify(out, 0, cc.recv, c, t, me, n, per, rep, root), 1);
		}
	}
	free(in);
	free(out);
}

static void test_data_check_against_reference_collectives(void **state)
{
	(void)state;
	for (int c = 0; c < COLL_COUNT; c++) {
		reference((enum coll)c, DT_INT32, 3, 999, 0, 1);
		reference((enum coll)c, DT_UINT64, 13, 13 * 40, 7, 12);
		reference((enum coll)c, DT_INT8, 30, 30 * 9, 3, 0); /* sums wrap at 256 */
	}
}

static void test_float_sums_are_exact(void **state)
{
	struct coll_counts cc;
	float in[4][64], out[64];

	(void)state;
	coll_counts(COLL_ALL_REDUCE, 64, 4, &cc);
	for (long r = 0; r < 4; r++)
		bench_fill(in[r], 0, 64, COLL_ALL_REDUCE, DT_FLOAT, r, 4, 5);
	for (size_t i = 0; i < 64; i++)
		out[i] = in[0][i] + in[1][i] + in[2][i] + in[3][i];
	assert_int_equal(bench_verify(out, 0, 64, COLL_ALL_REDUCE, DT_FLOAT, 0, 4, 64, 5, 0), 0);
	out[7] += 1.0f;
	assert_int_equal(bench_verify(out, 0, 64, COLL_ALL_REDUCE, DT_FLOAT, 0, 4, 64, 5, 0), 1);
	/* A different repetition expects different data: stale results show. */
	out[7] -= 1.0f;
	assert_true(bench_verify(out, 0, 64, COLL_ALL_REDUCE, DT_FLOAT, 0, 4, 64, 6, 0) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_float_format_keeps_the_column_width),
		cmocka_unit_test(test_row_matches_nccl_tests_layout),
		cmocka_unit_test(test_row_shows_unchecked_as_na),
		cmocka_unit_test(test_header_and_footer_match_nccl_tests),
		cmocka_unit_test(test_preamble_lists_devices_like_nccl_tests),
		cmocka_unit_test(test_json_document),
		cmocka_unit_test(test_flags_have_nccl_tests_meanings),
		cmocka_unit_test(test_data_check_against_reference_collectives),
		cmocka_unit_test(test_float_sums_are_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
