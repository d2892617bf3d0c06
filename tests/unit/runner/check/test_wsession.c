/* Unit tests: the worker session of check and bench (real ranks: this
 * process and forked children on 127.0.0.1, each with the environment
 * ctrun gives a worker) and the backend interface's contract: every
 * backend fills every operation it must, the NCCL backend steps aside
 * without a CUDA device, the socket backend runs collectives through the
 * operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "netinfo.h"
#include "wsession.h"

#define NVARS 12

/* The environment ctrun gives each of `world` ranks on one host. */
struct world {
	long port, n;
	char vars[4][NVARS][128];
	char *envp[4][NVARS + 1];
};

static void set(struct world *w, long r, int i, const char *key, long v, const char *text)
{
	if (text != NULL)
		snprintf(w->vars[r][i], sizeof(w->vars[r][i]), "%s=%s", key, text);
	else
		snprintf(w->vars[r][i], sizeof(w->vars[r][i]), "%s=%ld", key, v);
	w->envp[r][i] = w->vars[r][i];
}

static int make_world(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct err e = { 0 };

	assert_non_null(w);
	assert_int_equal(net_free_port(&w->port, &e), 0);
	w->n = 2;
	for (long r = 0; r < 4; r++) {
		set(w, r, 0, "RANK", r, NULL);
		set(w, r, 1, "LOCAL_RANK", r, NULL);
		set(w, r, 2, "WORLD_SIZE", w->n, NULL);
		set(w, r, 3, "LOCAL_WORLD_SIZE", w->n, NULL);
		set(w, r, 4, "NODE_RANK", 0, NULL);
		set(w, r, 5, "NNODES", 1, NULL);
		set(w, r, 6, "MASTER_ADDR", 0, "127.0.0.1");
		set(w, r, 7, "MASTER_PORT", w->port, NULL);
		set(w, r, 8, "SLURMD_NODENAME", 0, "testhost");
		set(w, r, 9, "TORCHELASTIC_RUN_ID", 0, "job1");
		set(w, r, 10, JOBKEY_RDZV_ENV, 0,
		    "0102030405060708091011121314151617181920212223242526272829303132");
		set(w, r, 11, "CUDA_VISIBLE_DEVICES", 0, "");
		w->envp[r][NVARS] = NULL;
	}
	*state = w;
	return 0;
}

static int free_world(void **state)
{
	free(*state);
	return 0;
}

/* A child that opens rank `rank`'s session with `o` and exits 0 when it
 * reached backend `want` (by name) and holds no rows, else 1..3. */
static pid_t rank_child(struct world *w, long rank, const struct wsession_opts *o,
			const char *want)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct wsession s;
		struct err e = { 0 };
		int rc = 0;

		if (wsession_open(&s, w->envp[rank], o, &e) < 0)
			rc = 1;
		else if (strcmp(s.backend->name, want) != 0)
			rc = 2;
		else if (s.rows != NULL)
			rc = 3;
		wsession_close(&s);
		_exit(rc);
	}
	return pid;
}

static int reap(pid_t pid)
{
	int st = 0;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Rank 1 in a child that must reach backend `want`; rank 0 here, its
 * session in s.  close_two ends both. */
static pid_t open_two(struct world *w, const struct wsession_opts *o, const char *want,
		      struct wsession *s)
{
	pid_t peer = rank_child(w, 1, o, want);
	struct err e = { 0 };

	assert_int_equal(wsession_open(s, w->envp[0], o, &e), 0);
	return peer;
}

static void close_two(struct wsession *s, pid_t peer)
{
	wsession_close(s);
	assert_int_equal(reap(peer), 0);
}

static void test_ranks_meet_and_rank0_holds_every_row(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10 };
	struct wsession s;
	pid_t peer = open_two(w, &o, "socket", &s);

	assert_int_equal(s.r.rank, 0);
	assert_int_equal(s.r.world, 2);
	assert_string_equal(s.w.master_addr, "127.0.0.1");
	assert_non_null(s.rows);
	assert_int_equal(s.rows[0].rank, 0);
	assert_int_equal(s.rows[1].rank, 1);
	assert_string_equal(s.rows[1].host, "testhost");
	assert_int_equal(s.rows[1].pid, peer);
	close_two(&s, peer);
}

static void test_no_cuda_device_falls_back_to_sockets(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10 };
	struct wsession s;
	pid_t peer = open_two(w, &o, "socket", &s);

	assert_false(s.row.cuda); /* CUDA_VISIBLE_DEVICES= hides every GPU */
	assert_ptr_equal(s.wanted, &backend_nccl);
	assert_ptr_equal(s.backend, &backend_socket);
	assert_true(wsession_fell_back(&s));
	close_two(&s, peer);
}

static void test_socket_asked_for_is_no_fallback(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10, .backend = "socket" };
	struct wsession s;
	pid_t peer = open_two(w, &o, "socket", &s);

	assert_ptr_equal(s.backend, &backend_socket);
	assert_false(wsession_fell_back(&s));
	close_two(&s, peer);
}

/* Fake backends for the vote: "fast" only on rank 0, "any" everywhere. */
static bool usable_on_rank0(const struct rank_row *row, char *why, size_t size)
{
	if (row->rank == 0)
		return true;
	snprintf(why, size, "not on rank %d", row->rank);
	return false;
}

static bool usable_everywhere(const struct rank_row *row, char *why, size_t size)
{
	(void)row;
	(void)why;
	(void)size;
	return true;
}

static const struct backend_ops fast = { .name = "fast", .usable = usable_on_rank0 };
static const struct backend_ops slow = { .name = "slow", .usable = usable_everywhere };
static const struct backend_ops last = { .name = "last" };
static const struct backend_ops *const fake_table[] = { &fast, &slow, &last, NULL };

static void test_vote_takes_the_first_backend_every_rank_can_use(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10, .table = fake_table };
	struct wsession s;
	pid_t peer = open_two(w, &o, "slow", &s);

	assert_ptr_equal(s.backend, &slow); /* rank 1 cannot use "fast" */
	assert_ptr_equal(s.wanted, &fast);
	assert_string_equal(s.why, "");   /* rank 0 could */
	assert_true(wsession_fell_back(&s));
	close_two(&s, peer);
}

static void test_vote_starts_at_the_backend_asked_for(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10, .table = fake_table, .backend = "last" };
	struct wsession s;
	pid_t peer = open_two(w, &o, "last", &s);

	assert_ptr_equal(s.backend, &last);
	assert_false(wsession_fell_back(&s));
	close_two(&s, peer);
}

static void test_unknown_backend_is_a_usage_error(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 1, .backend = "carrier-pigeon" };
	struct wsession s;
	struct err e = { 0 };

	assert_int_equal(wsession_open(&s, w->envp[0], &o, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "unknown backend 'carrier-pigeon'");
	wsession_close(&s);
}

static int refuse(const struct worker_ctx *w, void *arg, struct err *e)
{
	*(long *)arg = w->rank + 100;
	return err_set(e, 1, "master resolves to loopback (test)");
}

static void test_failed_preflight_meets_nobody(void **state)
{
	struct world *w = *state;
	long seen = 0;
	struct wsession_opts o = { .timeout = 1, .preflight = refuse, .arg = &seen };
	struct wsession s;
	struct err e = { 0 };

	assert_int_equal(wsession_open(&s, w->envp[1], &o, &e), -1);
	assert_int_equal(seen, 101); /* it saw the contract */
	assert_string_equal(e.msg, "master resolves to loopback (test)"); /* not wrapped */
	assert_null(s.r.fds); /* never met anyone */
	assert_false(wsession_reported(&s));
	wsession_close(&s);
}

static void test_missing_contract_is_a_usage_error(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 1 };
	struct wsession s;
	struct err e = { 0 };

	w->vars[1][0][0] = 'X'; /* XANK=1: no RANK */
	assert_int_equal(wsession_open(&s, w->envp[1], &o, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "RANK='' is missing or invalid"));
	wsession_close(&s);
}

static void test_rank_told_by_rank0_is_reported(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 5 };
	struct wsession s;
	struct err e = { 0 };
	pid_t root = fork();

	assert_true(root >= 0);
	if (root == 0) { /* rank 0 of a world of 3: it tells rank 1 the sizes differ */
		struct wsession r0;
		struct err e0 = { 0 };

		w->vars[0][2][strlen("WORLD_SIZE=")] = '3';
		_exit(wsession_open(&r0, w->envp[0], &o, &e0) < 0 ? 0 : 1);
	}
	assert_int_equal(wsession_open(&s, w->envp[1], &o, &e), -1);
	assert_true(wsession_reported(&s));
	wsession_close(&s);
	assert_int_equal(reap(root), 0);
}

/* The contract every backend keeps. */
static void test_every_backend_fills_its_operations(void **state)
{
	(void)state;
	for (size_t i = 0; backend_table[i] != NULL; i++) {
		const struct backend_ops *b = backend_table[i];

		assert_non_null(b->name);
		assert_ptr_equal(backend_find(b->name), b);
		assert_non_null(b->supports);
		assert_non_null(b->describe);
		assert_non_null(b->open);
		assert_non_null(b->close);
		assert_non_null(b->alloc);
		assert_non_null(b->free);
		assert_non_null(b->mem_budget);
		assert_non_null(b->clear);
		assert_non_null(b->upload);
		assert_non_null(b->download);
		assert_non_null(b->run);
		assert_non_null(b->sync);
	}
	/* The vote always ends: the last backend needs no vote. */
	assert_null(backend_table[1]->usable);
	assert_null(backend_table[2]);
	assert_null(backend_find("mpi"));
}

static void test_nccl_steps_aside_without_a_cuda_device(void **state)
{
	struct rank_row row = { .cuda = 0 };
	char why[200] = "";

	(void)state;
	assert_false(backend_nccl.usable(&row, why, sizeof(why)));
	assert_string_equal(why, ""); /* the row says why: backend_fallback_note */
	assert_true(backend_nccl.supports(COLL_ALL_REDUCE, DT_HALF, why, sizeof(why)));
}

static void test_backends_describe_their_devices_as_bench_prints_them(void **state)
{
	struct rank_row row = { .ordinal = 3, .bus_id = "00000000:07:00.0", .gpu_name = "H100" };
	struct bench_device d;

	(void)state;
	memset(&d, 0, sizeof(d));
	backend_nccl.describe(&row, &d);
	assert_int_equal(d.device, 3);
	assert_string_equal(d.bus, "00000000:0"); /* nccl-tests' 10 characters */
	assert_string_equal(d.name, "H100");
	backend_socket.describe(&row, &d);
	assert_int_equal(d.device, -1);
	assert_string_equal(d.bus, "-");
	assert_string_equal(d.name, "CPU (socket backend)");
	assert_null(backend_socket.banner);
}

static void test_socket_refuses_sums_of_16_bit_floats(void **state)
{
	char why[200] = "";

	(void)state;
	assert_true(backend_socket.supports(COLL_ALL_GATHER, DT_HALF, why, sizeof(why)));
	assert_true(backend_socket.supports(COLL_ALL_REDUCE, DT_FLOAT, why, sizeof(why)));
	assert_false(backend_socket.supports(COLL_REDUCE_SCATTER, DT_BFLOAT16, why, sizeof(why)));
	assert_string_equal(why, "needs the nccl backend (GPUs); the socket backend sums 8- to "
				 "64-bit types");
}

/* One rank's all-reduce of rank+1 through the operations; 0 when the sum is right. */
static int allreduce_through_ops(struct wsession *s, struct err *e)
{
	struct backend be = { 0 };
	int32_t host[1000], *send = NULL, *recv = NULL;
	int rv = -1;

	for (size_t i = 0; i < 1000; i++)
		host[i] = (int32_t)(s->r.rank + 1 + (long)i);
	if (backend_open(&be, s->backend, &s->r, &s->row, e) < 0 ||
	    be.ops->alloc(&be, sizeof(host), (void **)&send, e) < 0 ||
	    be.ops->alloc(&be, sizeof(host), (void **)&recv, e) < 0 ||
	    be.ops->upload(&be, send, host, sizeof(host), e) < 0 ||
	    be.ops->run(&be, &(struct coll_call){ .coll = COLL_ALL_REDUCE, .send = send, .recv = recv,
						  .count = 1000, .type = DT_INT32 }, e) < 0 ||
	    be.ops->sync(&be, e) < 0 || be.ops->download(&be, host, recv, sizeof(host), e) < 0)
		goto out;
	rv = 0;
	for (size_t i = 0; i < 1000; i++)
		if (host[i] != (int32_t)(3 + 2 * (long)i)) /* (1 + i) + (2 + i) */
			rv = 1;
out:
	if (be.impl != NULL) {
		be.ops->free(&be, send);
		be.ops->free(&be, recv);
	}
	backend_close(&be);
	backend_close(&be); /* twice is harmless */
	return rv;
}

static void test_socket_backend_all_reduces_through_its_operations(void **state)
{
	struct world *w = *state;
	struct wsession_opts o = { .timeout = 10, .backend = "socket" };
	struct wsession s;
	struct err e = { 0 };
	pid_t peer = fork();

	assert_true(peer >= 0);
	if (peer == 0) {
		struct wsession s1;
		struct err e1 = { 0 };
		int rc = wsession_open(&s1, w->envp[1], &o, &e1) < 0 ? 2
			 : allreduce_through_ops(&s1, &e1) != 0 ? 1 : 0;

		wsession_close(&s1);
		_exit(rc);
	}
	assert_int_equal(wsession_open(&s, w->envp[0], &o, &e), 0);
	assert_int_equal(allreduce_through_ops(&s, &e), 0);
	close_two(&s, peer);
}

#define T(f) cmocka_unit_test_setup_teardown(f, make_world, free_world)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_ranks_meet_and_rank0_holds_every_row),
		T(test_no_cuda_device_falls_back_to_sockets),
		T(test_socket_asked_for_is_no_fallback),
		T(test_vote_takes_the_first_backend_every_rank_can_use),
		T(test_vote_starts_at_the_backend_asked_for),
		T(test_unknown_backend_is_a_usage_error),
		T(test_failed_preflight_meets_nobody),
		T(test_missing_contract_is_a_usage_error),
		T(test_rank_told_by_rank0_is_reported),
		cmocka_unit_test(test_every_backend_fills_its_operations),
		cmocka_unit_test(test_nccl_steps_aside_without_a_cuda_device),
		cmocka_unit_test(test_backends_describe_their_devices_as_bench_prints_them),
		cmocka_unit_test(test_socket_refuses_sums_of_16_bit_floats),
		T(test_socket_backend_all_reduces_through_its_operations),
	};

	/* libcudart reads the process's own environment: no GPU here either,
	 * so the vote is the same on a machine with one. */
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
