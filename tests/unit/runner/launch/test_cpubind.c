/* Unit tests: each worker's CPUs follow its GPU's NUMA node inside the
 * task's CPUs, else an even split (cpu lists as sysfs writes them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpulist.h"
#include "cpubind.h"
#include "gpu.h"

static cpu_set_t set(const char *list)
{
	cpu_set_t s;

	assert_int_equal(cpulist_parse(list, &s), 0);
	return s;
}

static const char *str(const cpu_set_t *s)
{
	static char buf[8][256];
	static int k;

	k = (k + 1) % 8;
	assert_int_equal(cpulist_format(s, buf[k], sizeof(buf[k])), 0);
	return buf[k];
}

static void test_even_split_without_numa(void **state)
{
	cpu_set_t all = set("0-7"), out[3];
	bool pin[3];

	(void)state;
	cpubind_plan(&all, NULL, 3, out, pin);
	assert_true(pin[0] && pin[1] && pin[2]);
	assert_string_equal(str(&out[0]), "0-1");
	assert_string_equal(str(&out[1]), "2-4");
	assert_string_equal(str(&out[2]), "5-7");
}

static void test_fewer_cpus_than_workers_inherits(void **state)
{
	cpu_set_t all = set("0-1"), out[4];
	bool pin[4];

	(void)state;
	cpubind_plan(&all, NULL, 4, out, pin);
	assert_false(pin[0] || pin[1] || pin[2] || pin[3]);
	cpubind_plan(&all, NULL, 1, out, pin);
	assert_false(pin[0]);
}

static void test_workers_follow_their_gpus_numa_node(void **state)
{
	/* 2 sockets x 8 CPUs; GPUs 0,1 on node 0, GPUs 2,3 on node 1; the
	 * task has CPUs 2-15 (Slurm kept 0-1 for something else). */
	cpu_set_t all = set("2-15"), n0 = set("0-7"), n1 = set("8-15"), out[4];
	const cpu_set_t *local[4] = { &n0, &n0, &n1, &n1 };
	bool pin[4];

	(void)state;
	cpubind_plan(&all, local, 4, out, pin);
	assert_true(pin[0] && pin[1] && pin[2] && pin[3]);
	assert_string_equal(str(&out[0]), "2-4");
	assert_string_equal(str(&out[1]), "5-7");
	assert_string_equal(str(&out[2]), "8-11");
	assert_string_equal(str(&out[3]), "12-15");
}

static void test_one_worker_gets_its_gpus_node(void **state)
{
	cpu_set_t all = set("0-15"), n1 = set("8-15"), out[1];
	const cpu_set_t *local[1] = { &n1 };
	bool pin[1];

	(void)state;
	cpubind_plan(&all, local, 1, out, pin);
	assert_true(pin[0]);
	assert_string_equal(str(&out[0]), "8-15");
}

static void test_unknown_or_disjoint_numa_falls_back_to_even_split(void **state)
{
	cpu_set_t all = set("0-3"), n0 = set("0-1"), far = set("8-15"), out[2];
	const cpu_set_t *half[2] = { &n0, NULL };
	const cpu_set_t *disjoint[2] = { &far, &far };
	bool pin[2];

	(void)state;
	cpubind_plan(&all, half, 2, out, pin);
	assert_string_equal(str(&out[0]), "0-1");
	assert_string_equal(str(&out[1]), "2-3");
	cpubind_plan(&all, disjoint, 2, out, pin);
	assert_string_equal(str(&out[0]), "0-1");
	assert_string_equal(str(&out[1]), "2-3");
}

static void test_crowded_node_shares_its_cpus(void **state)
{
	cpu_set_t all = set("0-15"), n0 = set("0"), out[2];
	const cpu_set_t *local[2] = { &n0, &n0 };
	bool pin[2];

	(void)state;
	cpubind_plan(&all, local, 2, out, pin);
	assert_true(pin[0] && pin[1]);
	assert_string_equal(str(&out[0]), "0");
	assert_string_equal(str(&out[1]), "0");
}

static void put(const char *root, const char *rel, const char *text)
{
	char p[512], cmd[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_gpu_locality_from_driver_and_sysfs(void **state)
{
	char root[] = "/tmp/ctrun-test-sysfs.XXXXXX", proc[128], sys[128], cmd[160];
	cpu_set_t s;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(sys, sizeof(sys), "%s/sys", root);
	put(proc, "gpus/0000:3b:00.0/information", "Model: \t X\nGPU UUID: \t GPU-abc-1\n"
		  "Device Minor: \t 0\n");
	put(proc, "gpus/0000:d8:00.0/information", "Model: \t X\nGPU UUID: \t GPU-def-2\n"
		  "Device Minor: \t 1\n");
	put(sys, "bus/pci/devices/0000:3b:00.0/local_cpulist", "0-7,16-23\n");
	put(sys, "bus/pci/devices/0000:d8:00.0/numa_node", "1\n");
	put(sys, "devices/system/node/node1/cpulist", "8-15,24-31\n");
	assert_int_equal(cpubind_gpu_local(proc, sys, "0", &s), 0);
	assert_string_equal(str(&s), "0-7,16-23");
	assert_int_equal(cpubind_gpu_local(proc, sys, "GPU-def-2", &s), 0);
	assert_string_equal(str(&s), "8-15,24-31");
	assert_int_equal(cpubind_gpu_local(proc, sys, "2", &s), -1);
	assert_int_equal(cpubind_gpu_local("/nonexistent", sys, "0", &s), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_even_split_without_numa),
		cmocka_unit_test(test_fewer_cpus_than_workers_inherits),
		cmocka_unit_test(test_workers_follow_their_gpus_numa_node),
		cmocka_unit_test(test_one_worker_gets_its_gpus_node),
		cmocka_unit_test(test_unknown_or_disjoint_numa_falls_back_to_even_split),
		cmocka_unit_test(test_crowded_node_shares_its_cpus),
		cmocka_unit_test(test_gpu_locality_from_driver_and_sysfs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
