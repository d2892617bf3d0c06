/* Unit tests: the node's RDMA fabric read from a sysfs tree and a /dev
 * made here, in the kernel's layout (class/infiniband/DEV/ports/N/...,
 * class/infiniband_verbs/uverbsK/{ibdev,dev}, class/infiniband_mad/umadK,
 * /dev/infiniband/...): as a ConnectX node with an InfiniBand and a RoCE
 * port shows it.  Device nodes need mknod (the unit tests run as root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fabric.h"
#include "util.h"

struct tree {
	char root[64], sys[96], dev[96];
};

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	assert_int_equal(mkdir_p(path, 0755), 0);
	*slash = '/';
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void node(const struct tree *t, const char *rel, unsigned maj, unsigned min)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", t->dev, rel);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(maj, min)), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	snprintf(t->root, sizeof(t->root), "/tmp/ctrun-test-fabric.XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->sys, sizeof(t->sys), "%s/sys", t->root);
	snprintf(t->dev, sizeof(t->dev), "%s/dev", t->root);
	put(t->sys, "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put(t->sys, "class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	put(t->sys, "class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
	put(t->sys, "class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
	put(t->sys, "class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	put(t->sys, "class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
	put(t->sys, "class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (2X EDR)\n");
	put(t->sys, "class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
	put(t->sys, "class/infiniband_verbs/uverbs0/dev", "231:192\n");
	put(t->sys, "class/infiniband_verbs/uverbs1/ibdev", "mlx5_1\n");
	put(t->sys, "class/infiniband_verbs/uverbs1/dev", "231:193\n");
	put(t->sys, "class/infiniband_verbs/abi_version", "6\n");
	put(t->sys, "class/infiniband_mad/umad0/ibdev", "mlx5_0\n");
	put(t->sys, "class/infiniband_mad/umad0/dev", "231:0\n");
	put(t->sys, "class/infiniband_mad/issm0/ibdev", "mlx5_0\n");
	put(t->sys, "class/infiniband_mad/issm0/dev", "231:64\n");
	put(t->dev, "infiniband/.keep", "");
	node(t, "infiniband/uverbs0", 231, 192);
	node(t, "infiniband/uverbs1", 231, 193);
	node(t, "infiniband/umad0", 231, 0);
	node(t, "infiniband/issm0", 231, 64);
	node(t, "infiniband/rdma_cm", 10, 58);
	node(t, "gdrdrv", 511, 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

static void test_ports_and_their_state(void **state)
{
	struct tree *t = *state;
	static struct fabric_info f;
	char line[300];

	fabric_scan(t->sys, t->dev, &f);
	assert_true(fabric_has_rdma(&f));
	assert_int_equal(f.nports, 2);
	assert_string_equal(f.ports[0].dev, "mlx5_0");
	assert_int_equal(f.ports[0].port, 1);
	assert_string_equal(f.ports[0].state, "ACTIVE");
	assert_true(f.ports[0].active);
	assert_string_equal(f.ports[0].link, "IB");
	assert_string_equal(f.ports[1].link, "RoCE");
	assert_false(f.ports[1].active);
	fabric_ports_line(&f, line, sizeof(line));
	assert_string_equal(line, "mlx5_0:1 ACTIVE IB 200 Gb/sec (4X HDR), "
				  "mlx5_1:1 DOWN RoCE 100 Gb/sec (2X EDR)");
}

/* What a container gets: each device's verbs and mad nodes, rdma_cm and
 * GDRCopy's; never the subnet manager's issm. */
static void test_container_nodes(void **state)
{
	struct tree *t = *state;
	static struct fabric_info f;
	struct strv nodes = { 0 };
	char joined[512];

	fabric_scan(t->sys, t->dev, &f);
	assert_int_equal(fabric_container_nodes(&f, &nodes), 0);
	assert_int_equal(strv_join(&nodes, joined, sizeof(joined)), 0);
	assert_string_equal(joined, "/dev/infiniband/uverbs0,/dev/infiniband/uverbs1,"
				    "/dev/infiniband/umad0,/dev/infiniband/rdma_cm,/dev/gdrdrv");
	strv_free(&nodes);
}

/* A /dev without a device's node (a container that did not get it), or
 * with a node of other numbers: not present. */
static void test_missing_or_wrong_nodes_are_not_present(void **state)
{
	struct tree *t = *state;
	static struct fabric_info f;
	char path[512];

	snprintf(path, sizeof(path), "%s/infiniband/uverbs1", t->dev);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(231, 200)), 0);
	snprintf(path, sizeof(path), "%s/infiniband/uverbs0", t->dev);
	assert_int_equal(unlink(path), 0);
	fabric_scan(t->sys, t->dev, &f);
	for (size_t i = 0; i < f.nnodes; i++)
		if (strstr(f.nodes[i].path, "uverbs") != NULL)
			assert_false(f.nodes[i].present);
}

static void test_no_rdma(void **state)
{
	static struct fabric_info f;
	struct strv nodes = { 0 };
	char line[32];

	(void)state;
	fabric_scan("/nonexistent-sys", "/nonexistent-dev", &f);
	assert_false(fabric_has_rdma(&f));
	assert_int_equal(f.nnodes, 0);
	assert_int_equal(fabric_container_nodes(&f, &nodes), 0);
	assert_int_equal(nodes.n, 0);
	fabric_ports_line(&f, line, sizeof(line));
	assert_string_equal(line, "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ports_and_their_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_or_wrong_nodes_are_not_present, setup,
						teardown),
		cmocka_unit_test(test_no_rdma),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
