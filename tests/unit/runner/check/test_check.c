/* Unit tests: the diagnoses of `ctrun check` that need no network (wrong
 * interface, duplicate GPU), its report, and the GPU/CPU helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json.h>

#include "cpulist.h"
#include "check.h"
#include "gpu.h"

static void test_ifname_follows_nccl_syntax(void **state)
{
	(void)state;
	assert_true(ifname_spec_matches("eth", "eth0"));       /* prefix */
	assert_true(ifname_spec_matches("ib,eth", "eth1"));    /* list */
	assert_false(ifname_spec_matches("ib", "eth0"));
	assert_false(ifname_spec_matches("=eth", "eth0"));     /* exact */
	assert_true(ifname_spec_matches("=eth0", "eth0"));
	assert_false(ifname_spec_matches("^docker,lo", "lo"));  /* exclude */
	assert_true(ifname_spec_matches("^docker,lo", "eth0"));
	assert_false(ifname_spec_matches("^=eth0", "eth0"));
}

static void test_wrong_interface_is_diagnosed(void **state)
{
	struct strv ifs = { 0 };
	char msg[300];

	(void)state;
	strv_push(&ifs, "lo");
	strv_push(&ifs, "eth0");
	assert_true(check_ifname("NCCL_SOCKET_IFNAME", "eth", &ifs, msg, sizeof(msg)));
	assert_false(check_ifname("NCCL_SOCKET_IFNAME", "ib0", &ifs, msg, sizeof(msg)));
	assert_string_equal(msg, "wrong interface: NCCL_SOCKET_IFNAME=ib0 selects no interface with "
				 "an address (this host has: lo, eth0)");
	assert_false(check_ifname("GLOO_SOCKET_IFNAME", "=eth", &ifs, msg, sizeof(msg)));
	strv_free(&ifs);
}

static struct rank_row row(int rank, const char *host, const char *group, const char *gpu,
			   const char *bus)
{
	struct rank_row r;

	memset(&r, 0, sizeof(r));
	r.rank = rank;
	snprintf(r.host, sizeof(r.host), "%s", host);
	snprintf(r.group, sizeof(r.group), "%s", group);
	snprintf(r.gpu, sizeof(r.gpu), "%s", gpu);
	snprintf(r.bus_id, sizeof(r.bus_id), "%s", bus);
	r.gpu_numa = -1;
	return r;
}

static void test_duplicate_gpu_by_bus_id(void **state)
{
	struct rank_row rows[3] = {
		row(0, "n1", "0", "0", "0000:07:00.0"),
		row(1, "n1", "1", "0", "0000:0b:00.0"), /* "0" in its own task: another GPU */
		row(2, "n2", "2", "0", "0000:07:00.0"), /* same bus id, other host: fine */
	};
	char msg[400];

	(void)state;
	assert_true(check_unique_gpus(rows, 3, msg, sizeof(msg)));
	snprintf(rows[1].bus_id, sizeof(rows[1].bus_id), "0000:07:00.0");
	assert_false(check_unique_gpus(rows, 3, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "duplicate GPU per node: ranks 0 and 1 on n1 both use GPU 0 "
				    "0000:07:00.0"));
}

static void test_duplicate_gpu_without_runtime_within_one_task(void **state)
{
	/* Node mode, 8 workers of one ctrun on 4 GPUs: LOCAL_RANK % 4 repeats. */
	struct rank_row rows[5] = {
		row(0, "n1", "0", "0", ""), row(1, "n1", "0", "1", ""), row(2, "n1", "0", "2", ""),
		row(3, "n1", "0", "3", ""), row(4, "n1", "0", "0", ""),
	};
	struct rank_row tasks[2] = { row(0, "n1", "0", "0", ""), row(1, "n1", "1", "0", "") };
	struct rank_row cpu[2] = { row(0, "n1", "0", "-", ""), row(1, "n1", "0", "-", "") };
	char msg[400];

	(void)state;
	assert_false(check_unique_gpus(rows, 5, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "ranks 0 and 4 on n1"));
	/* Task mode under device cgroups: each task's only GPU is "0". */
	assert_true(check_unique_gpus(tasks, 2, msg, sizeof(msg)));
	/* CPU-only nodes have no GPU to share. */
	assert_true(check_unique_gpus(cpu, 2, msg, sizeof(msg)));
}

static void test_report_table_and_json(void **state)
{
	struct rank_row rows[2] = { row(0, "ctbnn1", "0", "0", ""), row(1, "ctbnn2", "1", "-", "") };
	struct check_summary s = { .master = "10.240.0.11:29500", .world = 2, .backend = "socket",
				   .backend_note = "no CUDA device: using socket backend (libcudart "
						   "not found)", .elements = 1048576,
				   .allreduce_run = true, .usec = 2500, .ok = true };
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	json_object *doc, *v, *r;

	(void)state;
	snprintf(rows[0].cpus, sizeof(rows[0].cpus), "0-3");
	snprintf(rows[0].numa, sizeof(rows[0].numa), "0");
	rows[1].node_rank = 1;
	f = open_memstream(&out, &len);
	check_report_table(f, rows, 2, &s);
	fclose(f);
	assert_non_null(strstr(out, "RANK  LOCAL  NODE  HOST    GPU  BUS_ID  CPUS  NUMA  GPU_NUMA\n"
				    "0     0      0     ctbnn1  0    -       0-3   0     -\n"
				    "1     0      1     ctbnn2  -    -       -     -     -\n"));
	assert_non_null(strstr(out, "rendezvous: 2 of 2 ranks met at 10.240.0.11:29500\n"));
	assert_non_null(strstr(out, "all-reduce: no CUDA device: using socket backend"));
	assert_non_null(strstr(out, "sum correct (2.5 ms)\n"));
	assert_non_null(strstr(out, "check: ok\n"));
	free(out);
	out = NULL;
	f = open_memstream(&out, &len);
	assert_int_equal(check_report_json(f, rows, 2, &s), 0);
	fclose(f);
	doc = json_tokener_parse(out);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "ok", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(doc, "ranks", &v));
	assert_int_equal(json_object_array_length(v), 2);
	r = json_object_array_get_idx(v, 1);
	assert_true(json_object_object_get_ex(r, "host", &v));
	assert_string_equal(json_object_get_string(v), "ctbnn2");
	assert_true(json_object_object_get_ex(r, "gpu", &v));
	assert_null(v);
	assert_true(json_object_object_get_ex(doc, "allreduce", &v));
	assert_true(json_object_object_get_ex(v, "backend", &r));
	assert_string_equal(json_object_get_string(r), "socket");
	json_object_put(doc);
	free(out);
}

/* The fabric, one line per node: its RDMA ports, whether the rank got
 * their devices, the libraries ctrun bound, the network NCCL took. */
static void test_report_fabric_per_node(void **state)
{
	struct rank_row rows[3] = { row(0, "n1", "0", "0", ""), row(1, "n1", "1", "1", ""),
				    row(2, "n2", "0", "0", "") };
	struct ncclnet nets[3] = { { .transport = "IB", .gdr = 1, .read = 1 },
				   { .transport = "IB", .gdr = 1, .read = 1 },
				   { .transport = "Socket", .read = 1 } };
	struct check_summary s = { .master = "a:1", .world = 3, .backend = "nccl", .nets = nets,
				   .ok = true };
	json_object *doc, *v, *node, *p;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	for (int i = 0; i < 2; i++) {
		rows[i].nports = 1;
		snprintf(rows[i].ports[0].dev, sizeof(rows[i].ports[0].dev), "mlx5_0");
		rows[i].ports[0].port = 1;
		snprintf(rows[i].ports[0].state, sizeof(rows[i].ports[0].state), "ACTIVE");
		snprintf(rows[i].ports[0].link, sizeof(rows[i].ports[0].link), "IB");
		snprintf(rows[i].ports[0].rate, sizeof(rows[i].ports[0].rate), "200 Gb/sec (4X HDR)");
		rows[i].ports[0].received = 1;
		snprintf(rows[i].netlibs, sizeof(rows[i].netlibs), "libfabric.so.1");
	}
	f = open_memstream(&out, &len);
	check_report_table(f, rows, 3, &s);
	fclose(f);
	assert_non_null(strstr(out, "fabric: n1: RDMA mlx5_0:1 ACTIVE IB 200 Gb/sec (4X HDR) "
				    "(received); libraries: libfabric.so.1; NCCL: IB, GDRDMA\n"
				    "fabric: n2: RDMA none; libraries: -; NCCL: Socket\n"));
	free(out);
	out = NULL;
	f = open_memstream(&out, &len);
	assert_int_equal(check_report_json(f, rows, 3, &s), 0);
	fclose(f);
	doc = json_tokener_parse(out);
	assert_true(json_object_object_get_ex(doc, "fabric", &v));
	assert_int_equal(json_object_array_length(v), 2);
	node = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(node, "rdma", &p));
	p = json_object_array_get_idx(p, 0);
	assert_true(json_object_object_get_ex(p, "received", &v) && json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(node, "nccl", &v));
	assert_true(json_object_object_get_ex(v, "transport", &p));
	assert_string_equal(json_object_get_string(p), "IB");
	json_object_put(doc);
	free(out);
	/* Without NCCL (the socket backend): "not run". */
	s.nets = NULL;
	out = NULL;
	f = open_memstream(&out, &len);
	check_report_table(f, rows, 3, &s);
	fclose(f);
	assert_non_null(strstr(out, "fabric: n2: RDMA none; libraries: -; NCCL: not run\n"));
	free(out);
}

static void test_failed_report_says_why(void **state)
{
	struct rank_row rows[1] = { row(0, "n1", "0", "0", "") };
	struct check_summary s = { .master = "a:1", .world = 1, .backend = "socket" };
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	strv_push(&s.diagnoses, "duplicate GPU per node: ranks 0 and 4 on n1 both use GPU 0");
	f = open_memstream(&out, &len);
	check_report_table(f, rows, 1, &s);
	fclose(f);
	assert_non_null(strstr(out, "diagnosis: duplicate GPU per node"));
	assert_non_null(strstr(out, "check: FAILED (1 problem)\n"));
	strv_free(&s.diagnoses);
	free(out);
}

static void test_cpu_lists_round_trip(void **state)
{
	cpu_set_t set;
	char s[64];

	(void)state;
	assert_int_equal(cpulist_parse("0-3,8,10-11\n", &set), 0);
	assert_int_equal(CPU_COUNT(&set), 7);
	assert_int_equal(cpulist_format(&set, s, sizeof(s)), 0);
	assert_string_equal(s, "0-3,8,10-11");
	assert_int_equal(cpulist_parse("5-2", &set), -1);
	assert_int_equal(cpulist_parse("x", &set), -1);
	CPU_ZERO(&set);
	assert_int_equal(cpulist_format(&set, s, sizeof(s)), 0);
	assert_string_equal(s, "");
	assert_int_equal(cpulist_parse("0-63", &set), 0);
	assert_int_equal(cpulist_format(&set, s, 4), -1); /* "0-63" does not fit 3 chars */
}

static void test_bus_ids_take_the_sysfs_form(void **state)
{
	char s[32];

	(void)state;
	assert_int_equal(gpu_bus_id_normalize("00000000:1A:00.0", s, sizeof(s)), 0);
	assert_string_equal(s, "0000:1a:00.0");
	assert_int_equal(gpu_bus_id_normalize("0000:07:00.0", s, sizeof(s)), 0);
	assert_string_equal(s, "0000:07:00.0");
	assert_int_equal(gpu_bus_id_normalize("garbage", s, sizeof(s)), -1);
}

static void test_no_gpu_runtime_fails_soft(void **state)
{
	char *envp[] = { "CUDA_VISIBLE_DEVICES=2,3", NULL };
	struct gpu_info g;
	struct rank_row r;
	char note[300];

	(void)state;
	/* This machine has the CUDA runtime but no driver, or no runtime at
	 * all: either way no device, no crash, and the scheduler's GPU id. */
	gpu_discover(1, envp, &g);
	if (g.cuda)
		skip();
	assert_string_equal(g.index, "3");
	assert_int_equal(g.ordinal, -1);
	assert_true(g.why[0] != '\0');
	memset(&r, 0, sizeof(r));
	snprintf(r.why, sizeof(r.why), "%s", g.why);
	backend_fallback_note(&r, "", note, sizeof(note));
	assert_true(strncmp(note, "no CUDA device: using socket backend (", 38) == 0);
}

/* A row from the network may hold no terminator anywhere: sealed, every
 * field ends inside it, and the report reads no further (ASan checks it
 * in make check's sanitizer run). */
static void test_rows_from_the_network_are_sealed(void **state)
{
	struct rank_row rows[2];
	struct check_summary s = { .world = 2 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memset(rows, 'A', sizeof(rows));
	for (int i = 0; i < 2; i++) {
		rank_row_seal(&rows[i]);
		rows[i].rank = i;
		assert_int_equal(strlen(rows[i].host), sizeof(rows[i].host) - 1);
		assert_int_equal(strlen(rows[i].why), sizeof(rows[i].why) - 1);
		assert_int_equal(strlen(rows[i].gpu_name), sizeof(rows[i].gpu_name) - 1);
	}
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	check_report_table(f, rows, 2, &s);
	fclose(f);
	assert_non_null(strstr(buf, "AAAA"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_from_the_network_are_sealed),
		cmocka_unit_test(test_ifname_follows_nccl_syntax),
		cmocka_unit_test(test_wrong_interface_is_diagnosed),
		cmocka_unit_test(test_duplicate_gpu_by_bus_id),
		cmocka_unit_test(test_duplicate_gpu_without_runtime_within_one_task),
		cmocka_unit_test(test_report_table_and_json),
		cmocka_unit_test(test_report_fabric_per_node),
		cmocka_unit_test(test_failed_report_says_why),
		cmocka_unit_test(test_cpu_lists_round_trip),
		cmocka_unit_test(test_bus_ids_take_the_sysfs_form),
		cmocka_unit_test(test_no_gpu_runtime_fails_soft),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
