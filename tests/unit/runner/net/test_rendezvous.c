/* Unit tests with real sockets on 127.0.0.1 and real processes: the
 * rendezvous and its diagnoses (port in use, nothing listening, world
 * size mismatch, missing and duplicate ranks, a foreign service or job on
 * the port, a master address that is not rank 0's, does not resolve, has
 * no route or drops the port) and the socket collectives, checked with
 * bench's data. */
#define CTRTEST_RDZV
#include <sched.h>
#include <signal.h>

#include "ctrtest.h"
#include "coll_data.h"
#include "coll_socket.h"
#include "rendezvous_int.h"

static void test_port_in_use(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long port = free_port();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, 0, 2, "j", 1000);

	(void)state;
	sa.sin_port = htons((uint16_t)port);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_PORT_IN_USE);
	assert_non_null(strstr(e.msg, "port in use: MASTER_PORT"));
	rdzv_close(&r);
	close(fd);
}

static void test_nobody_listening(void **state)
{
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(free_port(), 1, 2, "j", 400);

	(void)state;
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_PORT_BLOCKED);
	assert_non_null(strstr(e.msg, "refused connections"));
	rdzv_close(&r);
}

static void test_master_addr_not_of_rank_0s_host(void **state)
{
	struct rdzv r;
	struct err e = { 0 };
	/* TEST-NET-3: never an address of this machine. */
	struct rdzv_opts o = opts(free_port(), 0, 2, "j", 400);

	(void)state;
	o.addr = "203.0.113.7";
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_UNREACHABLE);
	assert_non_null(strstr(e.msg, "MASTER_ADDR 203.0.113.7 is not an address of testhost"));
	rdzv_close(&r);
}

static void test_master_addr_that_does_not_resolve(void **state)
{
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(free_port(), 1, 2, "j", 400);

	(void)state;
	o.addr = "no-such-host.invalid"; /* RFC 6761: never resolves */
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_UNREACHABLE);
	assert_non_null(strstr(e.msg, "MASTER_ADDR 'no-such-host.invalid' does not resolve on "
				      "testhost"));
	rdzv_close(&r);
}

/* In a network namespace of its own (root: make check runs as root):
 * 10.9.9.9 sits behind a veth pair whose far end has no address, with a
 * static neighbour entry, so every SYN to it vanishes (a firewall that
 * drops the port); 10.8.8.8 has no route.  The child exits with 0 when
 * both diagnoses came out right. */
static void test_dropped_port_and_no_route(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rdzv r;
		struct err e = { 0 };
		struct rdzv_opts o = opts(29500, 1, 2, "j", 1500);
		int ok = 1;

		if (unshare(CLONE_NEWNET) < 0 ||
		    system("ip link add v0 type veth peer name v1 && ip link set v0 up && "
			   "ip link set v1 up && ip addr add 10.9.9.1/24 dev v0 && "
			   "ip neigh add 10.9.9.9 lladdr 02:00:00:00:00:09 dev v0") != 0) {
			perror("unshare or ip (needs root)");
			_exit(3);
		}
		o.addr = "10.9.9.9";
		ok &= rdzv_open(&r, &o, &e) == -1 && r.fail == RDZV_PORT_BLOCKED &&
		      strstr(e.msg, "port blocked: connecting from testhost to 10.9.9.9:29500 "
				    "timed out") != NULL;
		rdzv_close(&r);
		o.addr = "10.8.8.8";
		ok &= rdzv_open(&r, &o, &e) == -1 && r.fail == RDZV_UNREACHABLE &&
		      strstr(e.msg, "no route from testhost to MASTER_ADDR 10.8.8.8") != NULL;
		rdzv_close(&r);
		if (!ok)
			fprintf(stderr, "last diagnosis: %s\n", e.msg);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_world_size_mismatch(void **state)
{
	long port = free_port();
	pid_t peer = join(port, 1, 3, "j", 3000);
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, 0, 2, "j", 3000);

	(void)state;
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_WORLD);
	assert_non_null(strstr(e.msg, "world size mismatch: rank 1 on testhost has WORLD_SIZE=3, "
				      "rank 0 on testhost has WORLD_SIZE=2"));
	rdzv_close(&r);
	assert_int_equal(reap(peer), RDZV_PEER); /* told by rank 0, stays quiet */
}

static void test_missing_ranks(void **state)
{
	long port = free_port();
	pid_t peer = join(port, 2, 4, "j", 3000);
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, 0, 4, "j", 600);

	(void)state;
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_WORLD);
	assert_non_null(strstr(e.msg, "2 of WORLD_SIZE=4 ranks"));
	assert_non_null(strstr(e.msg, "missing ranks 1,3"));
	rdzv_close(&r);
	assert_int_equal(reap(peer), RDZV_PEER);
}

static void test_duplicate_rank(void **state)
{
	long port = free_port();
	pid_t a = join(port, 1, 3, "j", 3000), b = join(port, 1, 3, "j", 3000);
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, 0, 3, "j", 3000);

	(void)state;
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_DUP_RANK);
	assert_non_null(strstr(e.msg, "duplicate RANK 1"));
	rdzv_close(&r);
	reap(a);
	reap(b);
}

static void test_another_job_on_the_port(void **state)
{
	long port = free_port();
	pid_t stranger = join(port, 1, 2, "other-job", 3000), ours, zero;

	(void)state;
	/* Rank 0 turns the stranger away and still meets its own rank 1,
	 * which joins only after the stranger has its answer (rank 0 stops
	 * listening once all are there). */
	zero = join(port, 0, 2, "j", 5000);
	assert_int_equal(reap(stranger), RDZV_FOREIGN);
	ours = join(port, 1, 2, "j", 5000);
	assert_int_equal(reap(ours), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
}

/* A connection that never says anything (a port scanner, a health check)
 * held rank 0 for 5 s before the others were read, past the deadline. */
static void test_silent_connection_holds_nobody_up(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long port = free_port();
	pid_t zero = join(port, 0, 2, "j", 1500), one;
	int idle = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	sa.sin_port = htons((uint16_t)port);
	for (int i = 0; connect(idle, (struct sockaddr *)&sa, sizeof(sa)) < 0 && i < 500; i++)
		usleep(10000); /* until rank 0 listens */
	one = join(port, 1, 2, "j", 1500);
	assert_int_equal(reap(one), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
	close(idle);
}

/* A rank of another ctrun version is told so, and rank 0 goes on waiting
 * for its own. */
static void test_another_version_is_refused_by_name(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long port = free_port();
	pid_t zero = join(port, 0, 2, "j", 3000), one;
	char hello[8 + 4 + 4 + 64 + 64] = "CTRUNRZ1", status[8 + 4 + 512];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	sa.sin_port = htons((uint16_t)port);
	for (int i = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && i < 500; i++)
		usleep(10000);
	assert_int_equal(sock_send_all(fd, hello, sizeof(hello)), 0);
	assert_int_equal(sock_recv_all(fd, status, sizeof(status)), 0);
	status[sizeof(status) - 1] = '\0';
	assert_non_null(strstr(status + 12, "rank 0 runs another version of ctrun (rendezvous "
					    "protocol 4, this rank speaks 1)"));
	close(fd);
	one = join(port, 1, 2, "j", 3000);
	assert_int_equal(reap(one), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
}

/* What another user can send: the public job string with a claimed rank
 * and world size, then (when `prove`) 32 bytes of a guessed proof.  Returns
 * the kind of rank 0's first reply, once rank 0 has closed the connection
 * (it dropped the forger: the event the caller waits for). */
static uint32_t forge(long port, const char *job, long rank, long world, bool prove)
{
	struct hello h = { .rank = htonl((uint32_t)rank), .world = htonl((uint32_t)world) };
	struct challenge c;
	uint8_t guess[JOBKEY_LEN] = { 0 }, rest;
	int fd = connect_rank0(port);

	memcpy(h.magic, MAGIC, 8);
	snprintf(h.job, sizeof(h.job), "%s", job);
	snprintf(h.host, sizeof(h.host), "attacker");
	assert_int_equal(sock_send_all(fd, &h, sizeof(h)), 0);
	assert_int_equal(sock_recv_all(fd, &c, sizeof(c)), 0);
	/* Rank 0 dropped it right after its challenge (the hello's MAC is
	 * wrong), so the guess may meet a closed socket. */
	if (prove)
		sock_send_all(fd, guess, sizeof(guess));
	else
		shutdown(fd, SHUT_WR); /* no key: nothing to prove with */
	assert_true(recv(fd, &rest, 1, 0) <= 0); /* rank 0 closed, said nothing more */
	close(fd);
	return ntohl(c.head.kind);
}

/* Another user knows the job string (squeue) but not the key: a hello
 * with a wrong world size, or one claiming rank 1, used to abort the
 * rendezvous (world size mismatch, duplicate rank).  Now rank 0 challenges
 * it, drops it, and meets the real rank 1. */
static void test_forged_hellos_are_dropped(void **state)
{
	long port = free_port();
	pid_t zero = join(port, 0, 2, "j", 5000), one;

	(void)state;
	assert_int_equal(forge(port, "j", 1, 3, true), RDZV_KIND_CHALLENGE); /* wrong world */
	assert_int_equal(forge(port, "j", 1, 2, true), RDZV_KIND_CHALLENGE); /* claims rank 1 */
	assert_int_equal(forge(port, "j", 1, 2, false), RDZV_KIND_CHALLENGE); /* no key at all */
	one = join(port, 1, 2, "j", 5000);
	assert_int_equal(reap(one), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
}

/* A process with the job string and a wrong key (another user's key
 * file) is told nothing and counts for nothing; the real rank 1 joins.
 * It learns that rank 0 is not its job's (rank 0's proof fails). */
static void test_wrong_key_is_dropped(void **state)
{
	long port = free_port();
	pid_t zero = join(port, 0, 2, "j", 5000), stranger, one;

	(void)state;
	close(connect_rank0(port)); /* rank 0 listens */
	stranger = join_with(port, 1, 3, "j", 3000, other_key);
	assert_int_equal(reap(stranger), RDZV_FOREIGN);
	one = join(port, 1, 2, "j", 5000);
	assert_int_equal(reap(one), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
}

/* The collectives' own connections: a silent stranger, a rank of another
 * job and another user with the job string but a wrong key (claiming
 * rank 2, first in the queue) are closed, the job's own peer is taken (it
 * used to read the first connection with no deadline: a stray one hung
 * the rank; and to take anyone who named the job). */
static void test_collective_accepts_only_its_jobs_peer(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), silent, forged, fd;
	char entry[80];
	struct err e = { 0 };
	long who = -1;
	pid_t other, ours;
	struct lobby *lobby;

	(void)state;
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	snprintf(entry, sizeof(entry), "127.0.0.1 %u", ntohs(sa.sin_port));
	silent = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(silent, (struct sockaddr *)&sa, sizeof(sa)), 0);
	forged = sock_connect_peer(entry, "j", other_key, 2, &e);
	assert_true(forged >= 0);
	other = fork();
	if (other == 0) {
		int c = sock_connect_peer(entry, "another-job", key, 5, &e);

		pause(); /* holds the connection until killed */
		_exit(c < 0);
	}
	ours = fork();
	if (ours == 0) {
		int c = sock_connect_peer(entry, "j", key, 3, &e);
		char b;

		_exit(c >= 0 && read(c, &b, 1) >= 0 ? 0 : 1); /* until the test closes it */
	}
	lobby = sock_lobby_new();
	assert_non_null(lobby);
	fd = sock_accept_peer(lfd, lobby, "j", key, 10000, &who, &e);
	assert_true(fd >= 0);
	assert_int_equal(who, 3);
	close(fd);
	assert_int_equal(reap(ours), 0);
	kill(other, SIGKILL);
	reap(other);
	/* Nobody at all: an error, not a hang. */
	assert_int_equal(sock_accept_peer(lfd, lobby, "j", key, 300, &who, &e), -1);
	assert_non_null(strstr(e.msg, "no peer connected"));
	lobby_free(lobby);
	close(silent);
	close(forged);
	close(lfd);
}

static void test_foreign_service_on_the_port(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long port = free_port();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t svc;
	struct rdzv r;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, 1, 2, "j", 1000);

	(void)state;
	sa.sin_port = htons((uint16_t)port);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	svc = fork();
	if (svc == 0) { /* an HTTP server, say */
		char junk[1024];
		int c = accept(fd, NULL, NULL);

		memset(junk, 'x', sizeof(junk));
		memcpy(junk, "HTTP/1.0 400 Bad Request\r\n", 26);
		if (c >= 0 && write(c, junk, sizeof(junk)) < 0)
			_exit(1);
		sleep(2);
		_exit(0);
	}
	assert_int_equal(rdzv_open(&r, &o, &e), -1);
	assert_int_equal(r.fail, RDZV_FOREIGN);
	assert_non_null(strstr(e.msg, "not as ctrun's rank 0"));
	rdzv_close(&r);
	close(fd);
	kill(svc, SIGKILL);
	reap(svc);
}

/* Rank `rank` of `world`: every collective, out of place and in place,
 * checked; exits with the number of wrong elements (100: an error). */
static void collectives_rank(long port, long rank, long world, size_t count)
{
	struct rdzv r;
	struct sock_comm c;
	struct err e = { 0 };
	struct rdzv_opts o = opts(port, rank, world, "j", 5000);
	size_t es = sizeof(float);
	char *send = calloc(count + 1, es), *recv = calloc(count + 1, es);
	long long wrong = 0;

	if (rdzv_open(&r, &o, &e) < 0 || sock_comm_open(&c, &r, &e) < 0)
		_exit(100);
	for (int k = 0; k < COLL_COUNT; k++)
		for (int inplace = 0; inplace < 2; inplace++) {
			enum coll coll = (enum coll)k;
			struct coll_counts cc;
			char *sp, *rp;
			int ret = -1;

			coll_counts(coll, count, (size_t)world, &cc);
			sp = inplace ? recv + cc.send_inplace_off * (size_t)rank * es : send;
			rp = inplace ? recv + cc.recv_inplace_off * (size_t)rank * es : recv;
			memset(recv, 0, count * es);
			bench_fill(sp, 0, cc.send, coll, DT_FLOAT, rank, world, k);
			switch (coll) {
			case COLL_ALL_REDUCE: ret = sock_all_reduce(&c, sp, rp, cc.param, DT_FLOAT, &e); break;
			case COLL_ALL_GATHER: ret = sock_all_gather(&c, sp, rp, cc.param, DT_FLOAT, &e); break;
			case COLL_REDUCE_SCATTER:
				ret = sock_reduce_scatter(&c, sp, rp, cc.param, DT_FLOAT, &e);
				break;
			case COLL_BROADCAST: ret = sock_broadcast(&c, sp, rp, cc.param, DT_FLOAT, 1, &e); break;
			case COLL_ALLTOALL: ret = sock_alltoall(&c, sp, rp, cc.param, DT_FLOAT, &e); break;
			case COLL_COUNT: break;
			}
			if (ret < 0)
				_exit(100);
			wrong += bench_verify(rp, 0, cc.recv, coll, DT_FLOAT, rank, world, cc.param, k, 1);
		}
	sock_comm_close(&c);
	rdzv_close(&r);
	_exit(wrong > 99 ? 99 : (int)wrong);
}

static void run_collectives(long world, size_t count)
{
	long port = free_port();
	pid_t pids[8];

	for (long i = 0; i < world; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			collectives_rank(port, i, world, count);
	}
	for (long i = 0; i < world; i++)
		assert_int_equal(reap(pids[i]), 0);
}

static void test_socket_collectives_two_ranks(void **state)
{
	(void)state;
	run_collectives(2, 1000);
}

static void test_socket_collectives_odd_ranks_and_sizes(void **state)
{
	(void)state;
	/* 5 ranks: chunks of unequal size; 3 MiB: several reduce slices. */
	run_collectives(5, 786433);
	run_collectives(3, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_in_use),
		cmocka_unit_test(test_nobody_listening),
		cmocka_unit_test(test_master_addr_not_of_rank_0s_host),
		cmocka_unit_test(test_master_addr_that_does_not_resolve),
		cmocka_unit_test(test_dropped_port_and_no_route),
		cmocka_unit_test(test_silent_connection_holds_nobody_up),
		cmocka_unit_test(test_another_version_is_refused_by_name),
		cmocka_unit_test(test_collective_accepts_only_its_jobs_peer),
		cmocka_unit_test(test_world_size_mismatch),
		cmocka_unit_test(test_missing_ranks),
		cmocka_unit_test(test_duplicate_rank),
		cmocka_unit_test(test_another_job_on_the_port),
		cmocka_unit_test(test_forged_hellos_are_dropped),
		cmocka_unit_test(test_wrong_key_is_dropped),
		cmocka_unit_test(test_foreign_service_on_the_port),
		cmocka_unit_test(test_socket_collectives_two_ranks),
		cmocka_unit_test(test_socket_collectives_odd_ranks_and_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
