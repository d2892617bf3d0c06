/* Unit tests: a stranger flooding a rank's port with connections (issue 29,
 * point 12).  MASTER_PORT is derived from the public job id and any user
 * can read a node's listening ports, so another user can keep hundreds of
 * connections open there: silent ones, garbage, and hellos that name the
 * job but cannot prove its key.  They must neither keep a real rank out nor
 * end the rendezvous, and the socket collectives' accept must find its
 * peer behind them. */
#define CTRTEST_RDZV
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>

#include "ctrtest.h"
#include "coll_socket.h"
#include "rendezvous_int.h"

#define FLOOD_MAX 256

/* One stranger's connection and what it sends once connected. */
enum flood_kind { FLOOD_SILENT, FLOOD_HELLO, FLOOD_MAGIC };

/* A child that keeps n connections to 127.0.0.1:port open for ever (until
 * killed), opening a new one for each that is closed: a third silent, a
 * third a hello of job `job` with a guessed proof, a third the first
 * bytes of the magic only.  It writes one byte to `ready` when the other
 * side first closed one of its silent connections: the listener has no
 * room left (or evicted one), the state the test wants to start from. */
static pid_t flood(long port, const char *job, int n, int ready)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid != 0)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct pollfd pfd[FLOOD_MAX];
		bool sent[FLOOD_MAX] = { false }, told = false;
		struct hello h = { .rank = htonl(1), .world = htonl(2) };

		memcpy(h.magic, MAGIC, sizeof(h.magic));
		snprintf(h.job, sizeof(h.job), "%s", job);
		snprintf(h.host, sizeof(h.host), "stranger");
		sa.sin_port = htons((uint16_t)port);
		for (int i = 0; i < n; i++)
			pfd[i].fd = -1;
		for (;;) {
			for (int i = 0; i < n; i++) {
				if (pfd[i].fd >= 0)
					continue;
				pfd[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
				if (pfd[i].fd < 0)
					_exit(2);
				if (connect(pfd[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
				    errno != EINPROGRESS) {
					close(pfd[i].fd);
					pfd[i].fd = -1;
					continue;
				}
				pfd[i].events = POLLIN | POLLOUT;
				sent[i] = false;
			}
			if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
				_exit(3);
			for (int i = 0; i < n; i++) {
				enum flood_kind kind = (enum flood_kind)(i % 3);
				char buf[512];

				if (pfd[i].fd < 0)
					continue;
				if ((pfd[i].revents & POLLOUT) && !sent[i]) {
					if (kind == FLOOD_HELLO)
						send(pfd[i].fd, &h, sizeof(h), MSG_NOSIGNAL);
					else if (kind == FLOOD_MAGIC)
						send(pfd[i].fd, MAGIC, 4, MSG_NOSIGNAL);
					sent[i] = true;
					pfd[i].events = POLLIN;
				}
				if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				if (recv(pfd[i].fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
					continue; /* a challenge: never answered */
				if (kind == FLOOD_SILENT && sent[i] && !told) {
					told = write(ready, "x", 1) == 1;
				}
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
	}
}

/* Waits for the flooder's byte: the listener is full of its connections. */
static void wait_flooded(int ready)
{
	char b;
	struct pollfd p = { .fd = ready, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 20000), 1);
	assert_int_equal(read(ready, &b, 1), 1);
}

/* 200 connections of a stranger's at rank 0 before rank 1 comes.  Rank 0
 * held at most 64 unproven connections and closed every newcomer while
 * full: the stranger's silent ones kept that up for 5 s each, longer than
 * the ranks' patience here, and rank 1 never got in (both failed).  Now a
 * newcomer takes the place of the oldest unproven connection, and a rank's
 * hello, MAC'd with the key, lifts it out of the strangers' places. */
static pid_t flooder = -1;

/* Whatever the verdict: the flooder goes. */
static int stop_flooder(void **state)
{
	(void)state;
	if (flooder > 0) {
		kill(flooder, SIGKILL);
		reap(flooder);
	}
	flooder = -1;
	return 0;
}

static void test_flood_of_strangers_keeps_no_rank_out(void **state)
{
	long port = free_port();
	pid_t zero = join(port, 0, 2, "j", 4000), one;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	close(connect_rank0(port)); /* rank 0 listens */
	flooder = flood(port, "j", 200, p[1]);
	wait_flooded(p[0]);
	one = join(port, 1, 2, "j", 4000);
	assert_int_equal(reap(one), RDZV_OK);
	assert_int_equal(reap(zero), RDZV_OK);
	close(p[0]);
	close(p[1]);
}

/* The socket collectives' accept behind 100 silent connections of a
 * stranger (who found the port in /proc/net/tcp): it read them one at a
 * time, 2 s each, and gave up long before the real peer's turn. */
static void test_collective_accept_finds_its_peer_behind_a_flood(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), silent[100], fd;
	char entry[80];
	struct err e = { 0 };
	long who = -1;
	pid_t ours;
	struct lobby *lobby;

	(void)state;
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4096), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	snprintf(entry, sizeof(entry), "127.0.0.1 %u", ntohs(sa.sin_port));
	for (int i = 0; i < 100; i++) {
		silent[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(silent[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	ours = fork();
	assert_true(ours >= 0);
	if (ours == 0) {
		int c = prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ? -1
			: sock_connect_peer(entry, "j", key, 3, &e);
		char b;

		_exit(c >= 0 && read(c, &b, 1) >= 0 ? 0 : 1); /* until the test closes it */
	}
	lobby = sock_lobby_new();
	assert_non_null(lobby);
	fd = sock_accept_peer(lfd, lobby, "j", key, 3000, &who, &e);
	if (fd < 0)
		fprintf(stderr, "accept: %s\n", e.msg);
	assert_true(fd >= 0);
	assert_int_equal(who, 3);
	close(fd);
	assert_int_equal(reap(ours), 0);
	lobby_free(lobby);
	for (int i = 0; i < 100; i++)
		close(silent[i]);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_flood_of_strangers_keeps_no_rank_out, stop_flooder),
		cmocka_unit_test(test_collective_accept_finds_its_peer_behind_a_flood),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
