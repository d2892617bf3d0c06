/* Unit tests: the job's timings summary: the report datagram read back
 * exactly, anything else ignored, the slowest node per phase, and rank 0
 * gathering real datagrams on a loopback UDP port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tsummary.h"

static const struct phase_row rows[] = {
	{ "topology", 4.25 }, { "image (mounted)", 57.5 }, { "workers", 2.0 }, { "total", 70.0 },
};

static void test_report_reads_back_exactly(void **state)
{
	char buf[TSUM_DGRAM_MAX];
	struct tsum_report r;
	int len = tsum_encode(buf, sizeof(buf), "77.0", 3, "node-b", rows, 4);

	(void)state;
	assert_true(len > 0);
	assert_int_equal(tsum_decode(buf, (size_t)len, "77.0", &r), 0);
	assert_int_equal(r.rank, 3);
	assert_string_equal(r.host, "node-b");
	assert_int_equal(r.n, 4);
	assert_string_equal(r.rows[1].name, "image (mounted)");
	assert_true(r.rows[1].ms > 57.49 && r.rows[1].ms < 57.51);
	assert_string_equal(r.rows[3].name, "total");
	/* Another job's step, or a truncated datagram: ignored. */
	assert_int_equal(tsum_decode(buf, (size_t)len, "77.1", &r), -1);
	assert_int_equal(tsum_decode(buf, (size_t)len - 1, "77.0", &r), -1);
}

/* A report carries each time exactly: the summary prints the same tenth
 * as the node's own line (9.6496 ms is "9.6" in both; a value rounded to
 * three decimals on the way, 9.650, would print "9.7"), and a total of
 * 1/3 ms, or a value with 17 significant digits, reads back bit for bit. */
static void test_times_read_back_bit_for_bit(void **state)
{
	const struct phase_row odd[] = {
		{ "stage (sbcast)", 9.6496 }, { "exec", 1.0 / 3.0 }, { "workers", 123456.78901234567 },
		{ "total", 0.1 + 0.2 },
	};
	char buf[TSUM_DGRAM_MAX], a[32], b[32];
	struct tsum_report r;
	int len = tsum_encode(buf, sizeof(buf), "77.0", 0, "n1", odd, 4);

	(void)state;
	assert_true(len > 0);
	assert_int_equal(tsum_decode(buf, (size_t)len, "77.0", &r), 0);
	for (size_t i = 0; i < 4; i++) {
		assert_memory_equal(&r.rows[i].ms, &odd[i].ms, sizeof(double));
		snprintf(a, sizeof(a), "%.1f", r.rows[i].ms);
		snprintf(b, sizeof(b), "%.1f", odd[i].ms);
		assert_string_equal(a, b);
	}
}

static void test_hostile_datagrams_are_ignored(void **state)
{
	const char *bad[] = {
		"CTRUNTM2\n77.0\n1\nh\ntopology\t1.0\n",       /* another wire version */
		"CTRUNTM1\n77.0\n-1\nh\ntopology\t1.0\n",      /* negative rank */
		"CTRUNTM1\n77.0\n1x\nh\ntopology\t1.0\n",      /* not a number */
		"CTRUNTM1\n77.0\n1\nh\x1b[2J\ntopology\t1.0\n", /* a terminal escape in the host */
		"CTRUNTM1\n77.0\n1\nh\ntopology\tnan\n",       /* not a finite time */
		"CTRUNTM1\n77.0\n1\nh\ntopology\t-3\n",        /* negative */
		"CTRUNTM1\n77.0\n1\nh\ntopology\t1e300\n",     /* absurd */
		"CTRUNTM1\n77.0\n1\nh\ntopology 1.0\n",        /* no tab */
		"CTRUNTM1\n77.0\n1\nh\n",                      /* no rows */
		"CTRUNTM1\n77.0\n1\nh\ntopology\t1.0",         /* no final newline */
	};
	char many[4096] = "CTRUNTM1\n77.0\n1\nh\n";
	struct tsum_report r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(tsum_decode(bad[i], strlen(bad[i]), "77.0", &r), -1);
	for (int i = 0; i <= PHASE_ROWS_MAX; i++)
		strcat(many, "p\t1.0\n");
	assert_int_equal(tsum_decode(many, strlen(many), "77.0", &r), -1);
}

static char *print(const struct tsum_report *own, const struct tsum_report *r, size_t n,
		   long expected)
{
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	assert_non_null(f);
	tsum_print(f, NULL, own, r, n, expected, "nodes");
	fclose(f);
	return out;
}

static void test_summary_names_the_slowest_node_per_phase(void **state)
{
	struct tsum_report own = { .rank = 0, .host = "n1", .n = 3,
				   .rows = { { "topology", 4.0 }, { "image", 50.0 }, { "total", 60.0 } } };
	struct tsum_report r[2] = {
		{ .rank = 1, .host = "n2", .n = 3,
		  .rows = { { "topology", 9.0 }, { "image", 20.0 }, { "total", 35.0 } } },
		{ .rank = 2, .host = "n3", .n = 3,
		  .rows = { { "topology", 1.0 }, { "image (mounted)", 5.0 }, { "total", 80.0 } } },
	};
	char *out = print(&own, r, 2, 3);

	(void)state;
	assert_string_equal(out, "ctrun: timings, slowest of 3 nodes: topology 9.0 ms (n2), "
				 "image 50.0 ms (n1), image (mounted) 5.0 ms (n3); total 80.0 ms (n3)\n");
	free(out);
	out = print(&own, r, 1, 4);
	assert_string_equal(out, "ctrun: timings, slowest of 2 nodes: topology 9.0 ms (n2), "
				 "image 50.0 ms (n1); total 60.0 ms (n1); 2 of 4 nodes did not report\n");
	free(out);
}

static void test_batch_staging_leads_the_summary(void **state)
{
	struct tsum_report batch, own = { .rank = 0, .host = "n1", .n = 2,
					 .rows = { { "topology", 4.0 }, { "total", 60.0 } } };
	struct tsum_report r = { .rank = 1, .host = "n2", .n = 2,
				 .rows = { { "topology", 9.0 }, { "total", 35.0 } } };
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	(void)state;
	assert_int_equal(tsum_batch_decode("n1;stage (prepare)=120.500;stage (sbcast)=80.250",
					   &batch), 0);
	assert_non_null(f);
	tsum_print(f, &batch, &own, &r, 1, 2, "nodes");
	fclose(f);
	assert_string_equal(out, "ctrun: timings, slowest of 2 nodes: stage (prepare) 120.5 ms "
				 "(n1 batch script), stage (sbcast) 80.2 ms (n1 batch script), "
				 "topology 9.0 ms (n2); total 60.0 ms (n1)\n");
	free(out);
}

static void test_bad_batch_timings_are_ignored(void **state)
{
	static const char *const bad[] = { "", "n1", ";stage=1", "n1;", "n1;stage",
					   "n1;=1", "n1;stage=x", "n1;stage=-1", "n1;stage=1;",
					   "n1;stage=1x", "n1;total=5", "n1;stage=1e99" };
	struct tsum_report r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(tsum_batch_decode(bad[i], &r), -1);
}

static void send_to(int port, const char *msg, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sendto(fd, msg, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
	close(fd);
}

/* A report sealed with a key; its length. */
static int sealed(char *msg, size_t size, const char *tag, const char *host,
		  const struct phase_row *pr, const uint8_t *k)
{
	int len = tsum_encode(msg, size - JOBKEY_LEN, tag, 1, host, pr, 2);

	assert_true(len > 0);
	return tsum_seal(msg, (size_t)len, size, k);
}

/* Rank 0 listens; a stranger's datagram, another step's report, reports
 * forged by another user (the public tag, claiming rank 1: unsealed, and
 * sealed with another key) and then the other node's report arrive; the
 * summary has exactly the other node (the forged ones came first and
 * used to take rank 1's place). */
static void test_rank0_gathers_the_other_nodes_reports(void **state)
{
	struct topo t0 = { .mode = MODE_NODE, .nnodes = 2, .node_rank = 0, .rank_base = 0,
			   .world_size = 2, .master_addr = "127.0.0.1", .host = "n1",
			   .job_id = "77", .step_id = "0" };
	struct phase_row slow[] = { { "exec", 99999.0 }, { "total", 99999.0 } };
	struct phase_row fake[] = { { "exec", 77777.0 }, { "total", 77777.0 } };
	char msg[TSUM_DGRAM_MAX], *out = NULL, hex[JOBKEY_HEX_LEN + 1];
	uint8_t secret[JOBKEY_LEN] = { 42 }, k[JOBKEY_LEN], wrong[JOBKEY_LEN] = { 43 };
	size_t size = 0;
	FILE *f;
	int fd = -1, len;

	(void)state;
	jobkey_to_hex(secret, hex);
	assert_int_equal(setenv(JOBKEY_SECRET_ENV, hex, 1), 0);
	jobkey_derive(secret, "timings", "77", "0", k);
	phase_mark("exec");
	for (int port = 23456; port < 23556 && fd < 0; port++) {
		t0.master_port = port;
		fd = tsum_listen(&t0, 0);
	}
	assert_true(fd >= 0);
	send_to((int)t0.master_port, "hello\n", 6);
	len = sealed(msg, sizeof(msg), "77.1", "other-step", slow, k);
	send_to((int)t0.master_port, msg, (size_t)len);
	len = tsum_encode(msg, sizeof(msg), "77.0", 1, "forger", fake, 2);
	send_to((int)t0.master_port, msg, (size_t)len);
	len = sealed(msg, sizeof(msg), "77.0", "forger", fake, wrong);
	send_to((int)t0.master_port, msg, (size_t)len);
	len = sealed(msg, sizeof(msg), "77.0", "n2", slow, k);
	send_to((int)t0.master_port, msg, (size_t)len);
	f = open_memstream(&out, &size);
	assert_non_null(f);
	tsum_finish(fd, &t0, 5000, f);
	fclose(f);
	assert_non_null(strstr(out, "ctrun: timings, slowest of 2 nodes: exec 99999.0 ms (n2)"));
	assert_null(strstr(out, "other-step"));
	assert_null(strstr(out, "forger"));
	assert_null(strstr(out, "did not report"));
	free(out);
}

/* Rank 0 of a one-node step, or a ctrun that is not rank 0: no socket. */
static void test_only_rank0_of_several_listens(void **state)
{
	struct topo one = { .mode = MODE_NODE, .nnodes = 1, .world_size = 4, .master_port = 23999 };
	struct topo other = { .mode = MODE_NODE, .nnodes = 2, .rank_base = 4, .world_size = 8,
			      .master_port = 23999 };

	(void)state;
	assert_int_equal(tsum_listen(&one, 0), -1);
	assert_int_equal(tsum_listen(&other, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_reads_back_exactly),
		cmocka_unit_test(test_times_read_back_bit_for_bit),
		cmocka_unit_test(test_hostile_datagrams_are_ignored),
		cmocka_unit_test(test_summary_names_the_slowest_node_per_phase),
		cmocka_unit_test(test_batch_staging_leads_the_summary),
		cmocka_unit_test(test_bad_batch_timings_are_ignored),
		cmocka_unit_test(test_rank0_gathers_the_other_nodes_reports),
		cmocka_unit_test(test_only_rank0_of_several_listens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
