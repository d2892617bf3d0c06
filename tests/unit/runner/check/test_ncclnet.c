/* Unit tests: the network NCCL chose, read from its NCCL_DEBUG=INFO lines,
 * and check's verdicts on it.
 *
 * The samples are not captured from runs (this machine has no GPU, no
 * RDMA): they are written line by line from NCCL's own format strings
 * (github:NVIDIA/nccl at 5067397, 2.28: the "HOST:PID:TID [DEV] NCCL INFO"
 * prefix of src/debug.cc, with and without NCCL_DEBUG_TIMESTAMP_FORMAT's
 * "[...] "; "Using network %s" of src/init.cc; "NET/IB : Using%s %s; OOB
 * %s:%s" with " [%d]%s:%d/%s" per device of src/transport/net_ib/init.cc;
 * "NET/Socket : Using%s" of net_socket.cc; the "Channel %02d/%d : %d[%d]
 * -> %d[%d] [send] via NET/%s/%d%s%s%s" lines of src/transport/net.cc;
 * the NET/Plugin lines of src/plugin/plugin_open.cc and plugin/net.cc),
 * and aws-ofi-nccl's plugin name "Libfabric" (src/nccl_ofi_interface_nvidia.cpp)
 * with the shapes of an InfiniBand, a RoCE, an EFA (aws-ofi-nccl) and a
 * socket run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdio.h>

#include "ncclnet.h"

static const char ib_run[] =
	"gpu01:2187:2187 [0] NCCL INFO Bootstrap : Using ib0:10.10.0.1<0>\n"
	"gpu01:2187:2187 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
	"gpu01:2187:2187 [0] NCCL INFO cudaDriverVersion 12040\n"
	"NCCL version 2.21.5+cuda12.4\n"
	"gpu01:2187:2215 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB "
	"ib0:10.10.0.1<0>\n"
	"gpu01:2187:2215 [0] NCCL INFO Using network IB\n"
	"gpu01:2187:2215 [0] NCCL INFO comm 0x55d0c0a0 rank 0 nRanks 2 nNodes 2 localRanks 1 "
	"localRank 0 MNNVL 0\n"
	"gpu01:2187:2215 [0] NCCL INFO Channel 00/02 :    0   1\n"
	"gpu01:2187:2230 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
	"gpu01:2187:2230 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n";

static const char roce_run[] =
	"[2026-11-29 10:00:00] node7:4242:4242 [3] NCCL INFO NET/Plugin: Could not find: "
	"libnccl-net.so\n"
	"[2026-11-29 10:00:01] node7:4242:4260 [3] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE "
	"[RO]; OOB bond0:192.168.1.7<0>\n"
	"[2026-11-29 10:00:01] node7:4242:4260 [3] NCCL INFO Using network IB\n"
	"[2026-11-29 10:00:02] node7:4242:4275 [3] NCCL INFO Channel 01/0 : 2[3] -> 3[3] [send] "
	"via NET/IB/0(2)/Shared\n";

static const char ofi_run[] =
	"ip-10-0-0-1:900:900 [0] NCCL INFO NCCL_NET_PLUGIN set by environment to ofi\n"
	"ip-10-0-0-1:900:900 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v9)\n"
	"ip-10-0-0-1:900:900 [0] NCCL INFO Successfully loaded external network plugin "
	"/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so\n"
	"ip-10-0-0-1:900:900 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct "
	"(found 4 nics)\n"
	"ip-10-0-0-1:900:900 [0] NCCL INFO Initialized NET plugin Libfabric\n"
	"ip-10-0-0-1:900:920 [0] NCCL INFO Using network Libfabric\n"
	"ip-10-0-0-1:900:931 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via "
	"NET/Libfabric/0/GDRDMA\n";

static const char socket_run[] =
	"gpu02:77:77 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
	"gpu02:77:95 [0] NCCL INFO NET/IB : No device found.\n"
	"gpu02:77:95 [0] NCCL INFO NET/Socket : Using [0]eth0:10.251.0.2<0>\n"
	"gpu02:77:95 [0] NCCL INFO Using network Socket\n"
	"gpu02:77:110 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n";

/* NCCL_NET_PLUGIN=ofi on a node where the plugin is there but its
 * libfabric is not: dlopen's error, then the internal nets. */
static const char ofi_broken_run[] =
	"gpu03:5:5 [0] NCCL INFO NCCL_NET_PLUGIN set by environment to ofi\n"
	"gpu03:5:5 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: libfabric.so.1: cannot open "
	"shared object file: No such file or directory\n"
	"gpu03:5:5 [0] NCCL INFO NET/Plugin: Could not find: ofi\n"
	"gpu03:5:20 [0] NCCL INFO NET/IB : No device found.\n"
	"gpu03:5:20 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.3<0>\n"
	"gpu03:5:20 [0] NCCL INFO Using network Socket\n";

static struct ncclnet parse(const char *text)
{
	struct ncclnet n = { .read = 0 };

	ncclnet_parse(text, strlen(text), &n);
	return n;
}

static void test_infiniband_run(void **state)
{
	struct ncclnet n = parse(ib_run);

	(void)state;
	assert_string_equal(n.net, "IB");
	assert_string_equal(n.transport, "IB");
	assert_true(n.gdr);
	assert_string_equal(n.plugin, "");
	assert_true(n.read);
}

static void test_roce_run_with_timestamps(void **state)
{
	struct ncclnet n = parse(roce_run);

	(void)state;
	assert_string_equal(n.transport, "RoCE");
	assert_false(n.gdr);
}

static void test_ofi_plugin_run(void **state)
{
	struct ncclnet n = parse(ofi_run);

	(void)state;
	assert_string_equal(n.net, "Libfabric");
	assert_string_equal(n.transport, "Libfabric (plugin)");
	assert_string_equal(n.plugin, "Libfabric (v9)");
	assert_string_equal(n.plugin_err, "");
	assert_true(n.gdr);
}

static void test_socket_run(void **state)
{
	struct ncclnet n = parse(socket_run);

	(void)state;
	assert_string_equal(n.transport, "Socket");
	assert_false(n.gdr);
}

static void test_broken_plugin_run(void **state)
{
	struct ncclnet n = parse(ofi_broken_run);

	(void)state;
	assert_string_equal(n.transport, "Socket");
	assert_string_equal(n.plugin, "");
	/* dlopen's error over the list of names not found. */
	assert_string_equal(n.plugin_err, "NET/Plugin: libnccl-net-ofi.so: libfabric.so.1: cannot "
					  "open shared object file: No such file or directory");
}

static void test_garbage_and_truncated_lines(void **state)
{
	char big[6000];
	struct ncclnet n;

	(void)state;
	n = parse("");
	assert_string_equal(n.transport, "");
	n = parse("NCCL INFO Using network IB\n"); /* no prefix: not NCCL's line */
	assert_string_equal(n.net, "");
	memset(big, 'x', sizeof(big));
	memcpy(big, "h:1:1 [0] NCCL INFO Using network ", 34);
	big[sizeof(big) - 1] = '\0';
	n = parse(big);
	assert_int_equal(strlen(n.net), sizeof(n.net) - 1);
	/* Bytes after a NUL are still read, as lines. */
	{
		static const char nul[] = "a\0b\nh:1:1 [0] NCCL INFO Using network Socket";

		ncclnet_parse(nul, sizeof(nul) - 1, &n);
	}
	assert_string_equal(n.transport, "Socket");
}

static struct rank_row node_row(const char *host, int rank, bool rdma, bool received, bool active)
{
	struct rank_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.host, sizeof(r.host), "%s", host);
	r.rank = rank;
	if (rdma) {
		r.nports = 1;
		snprintf(r.ports[0].dev, sizeof(r.ports[0].dev), "mlx5_0");
		r.ports[0].port = 1;
		snprintf(r.ports[0].state, sizeof(r.ports[0].state), active ? "ACTIVE" : "DOWN");
		snprintf(r.ports[0].link, sizeof(r.ports[0].link), "IB");
		r.ports[0].active = active;
		r.ports[0].received = received;
	}
	return r;
}

static void test_socket_fallback_on_rdma_node_fails(void **state)
{
	struct rank_row rows[2] = { node_row("gpu01", 0, true, true, true),
				    node_row("gpu02", 1, true, false, true) };
	struct ncclnet nets[2] = { parse(ib_run), parse(socket_run) };
	char msg[1024];

	(void)state;
	assert_false(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "socket fallback: NCCL on gpu02 (rank 1) used sockets "
				    "(NET/Socket), though gpu02 has RDMA devices (mlx5_0:1 ACTIVE IB)"));
	assert_non_null(strstr(msg, "(the container did not receive them): set [fabric] rdma"));
	/* Received but down: the link is the fix. */
	rows[1] = node_row("gpu02", 1, true, true, false);
	assert_false(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "no port is ACTIVE"));
	rows[1] = node_row("gpu02", 1, true, true, true);
	assert_false(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "NCCL_IB_DISABLE"));
	/* Sockets on a node without RDMA is what it can do: no verdict. */
	rows[1] = node_row("gpu02", 1, false, false, false);
	assert_true(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	/* Nothing read (the socket backend ran, not NCCL): no verdict. */
	nets[1].read = 0;
	rows[1] = node_row("gpu02", 1, true, false, true);
	assert_true(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
}

static void test_configured_plugin_that_did_not_load_fails(void **state)
{
	struct rank_row rows[2] = { node_row("ip-1", 0, false, false, false),
				    node_row("ip-2", 1, false, false, false) };
	struct ncclnet nets[2] = { parse(ofi_run), parse(ofi_broken_run) };
	char msg[1024];

	(void)state;
	strcpy(nets[0].wanted, "ofi");
	strcpy(nets[1].wanted, "ofi");
	assert_false(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "net plugin not loaded: NCCL_NET_PLUGIN=ofi on ip-2 (rank 1): "
				    "NET/Plugin: libnccl-net-ofi.so: libfabric.so.1: cannot open shared "
				    "object file: No such file or directory; NCCL used Socket instead"));
	/* Loaded everywhere: fine; no plugin asked for: the default
	 * libnccl-net.so's miss is no failure. */
	nets[1] = nets[0];
	assert_true(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	nets[0] = parse(socket_run);
	nets[1] = parse(socket_run);
	assert_true(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
	strcpy(nets[1].wanted, "none");
	assert_true(check_nccl_net(rows, nets, 2, msg, sizeof(msg)));
}

static void test_summary_for_bench(void **state)
{
	struct rank_row rows[3] = { node_row("gpu01", 0, true, true, true),
				    node_row("gpu01", 1, true, true, true),
				    node_row("gpu02", 2, true, false, true) };
	struct ncclnet nets[3] = { parse(ib_run), parse(ib_run), parse(ib_run) };
	char buf[200];

	(void)state;
	ncclnet_summary(rows, nets, 3, buf, sizeof(buf));
	assert_string_equal(buf, "IB, GDRDMA");
	nets[2] = parse(socket_run);
	ncclnet_summary(rows, nets, 3, buf, sizeof(buf));
	assert_string_equal(buf, "gpu01 IB, GDRDMA; gpu02 Socket");
	for (int i = 0; i < 3; i++)
		nets[i].read = 0;
	ncclnet_summary(rows, nets, 3, buf, sizeof(buf));
	assert_string_equal(buf, "unknown (NCCL's lines were not read)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_infiniband_run),
		cmocka_unit_test(test_roce_run_with_timestamps),
		cmocka_unit_test(test_ofi_plugin_run),
		cmocka_unit_test(test_socket_run),
		cmocka_unit_test(test_broken_plugin_run),
		cmocka_unit_test(test_garbage_and_truncated_lines),
		cmocka_unit_test(test_socket_fallback_on_rdma_node_fails),
		cmocka_unit_test(test_configured_plugin_that_did_not_load_fails),
		cmocka_unit_test(test_summary_for_bench),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
