/* Unit tests: the batch ctrun's watch (watch.h) with real sockets, each
 * node a forked process using the node's side (watchclient.h): a node that
 * ends says its last word, a node that dies without it is lost at once, a
 * stranger or a node of another attempt is not listened to, and ranks that
 * all stop making progress are a hang that names the first to stall. */
#include "ctrtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "watch.h"
#include "watchclient.h"

#define SECRET_HEX "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

struct fx {
	struct watch w;
	pid_t kids[4];
	size_t nkids;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	uint8_t secret[JOBKEY_LEN];
	struct err e = { 0 };

	if (f == NULL || jobkey_from_hex(SECRET_HEX, secret) < 0 ||
	    watch_open(&f->w, "42", secret, "127.0.0.1", &e) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	for (size_t i = 0; i < f->nkids; i++) {
		kill(f->kids[i], SIGKILL);
		waitpid(f->kids[i], NULL, 0);
	}
	watch_close(&f->w);
	free(f);
	return 0;
}

enum how { SAY_DONE, DIE, STALL, WRONG_ATTEMPT, STARTING };

/* A node's ctrun: connects as host, then behaves as how says. */
static void node(struct fx *f, const char *host, enum how how)
{
	char where[128], attempt[32];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid > 0) {
		f->kids[f->nkids++] = pid;
		return;
	}
	snprintf(where, sizeof(where), WATCH_ENV "=%s", f->w.where);
	snprintf(attempt, sizeof(attempt), "CTRUN_RESTART_COUNT=%ld",
		 how == WRONG_ATTEMPT ? f->w.attempt + 1 : f->w.attempt);
	char *env[] = { where, attempt, "SLURM_STEP_ID=7", "CTRUN_JOB_SECRET=" SECRET_HEX, NULL };

	watchc_open(host, "42", env, true);
	if (!watchc_on())
		_exit(3);
	if (how == STALL) {
		watchc_progress(5, 60000, true);
		watchc_progress(4, 1000, true);
		pause();
	}
	if (how == STARTING) {
		/* Silent as long, but rank 2 has not made its first progress. */
		watchc_progress(1, 60000, true);
		watchc_progress(2, 60000, false);
		pause();
	}
	watchc_progress(0, 10, true);
	if (how == SAY_DONE)
		watchc_done(0);
	_exit(0); /* DIE: the kernel closes the connection, no last word */
}

/* Polls the watch until it reports an event other than NONE (10 s at most). */
static enum watch_event wait_event(struct fx *f, char *host, char *why, size_t size)
{
	long long until = mono_ms() + 10000;
	enum watch_event ev = WATCH_EV_NONE;

	while (ev == WATCH_EV_NONE && mono_ms() < until) {
		size_t n = watch_pollfds(&f->w);

		assert_true(poll(f->w.pfd, n, 100) >= 0);
		for (size_t k = 0; k < n; k++)
			watch_ready(&f->w, k, f->w.pfd[k].revents);
		ev = watch_check(&f->w, host, WATCH_HOST_MAX, why, size);
	}
	return ev;
}

static void test_nodes_that_end_say_so(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", "n2", NULL }, host[WATCH_HOST_MAX], why[512];

	assert_int_equal(watch_begin(&f->w, 0, nodes, 0, 0), 0);
	node(f, "n1", SAY_DONE);
	node(f, "n2", SAY_DONE);
	assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_ALL_DONE);
	assert_int_equal(f->w.step, 7);
}

static void test_a_node_that_dies_is_lost_at_once(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", "n2", NULL }, host[WATCH_HOST_MAX], why[512];

	assert_int_equal(watch_begin(&f->w, 2, nodes, 0, 0), 0);
	node(f, "n1", SAY_DONE);
	node(f, "n2", DIE);
	assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_LOST);
	assert_string_equal(host, "n2");
	assert_non_null(strstr(why, "ended before its ctrun did"));
	/* Said once; then every node is accounted for. */
	assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_ALL_DONE);
}

/* A stranger's bytes and a node of another attempt are dropped: the
 * expected node is still to come, and is lost only when it never does. */
static void test_strangers_and_old_attempts_are_not_heard(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", NULL }, host[WATCH_HOST_MAX], why[512];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	long long until = mono_ms() + 1500;

	assert_int_equal(watch_begin(&f->w, 1, nodes, 0, 0), 0);
	sa.sin_port = htons((uint16_t)atoi(strrchr(f->w.where, ':') + 1));
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(s, "D 0\n", 4), 4);
	node(f, "n1", WRONG_ATTEMPT);
	while (mono_ms() < until) {
		size_t n = watch_pollfds(&f->w);

		poll(f->w.pfd, n, 100);
		for (size_t k = 0; k < n; k++)
			watch_ready(&f->w, k, f->w.pfd[k].revents);
		assert_int_equal(watch_check(&f->w, host, sizeof(host), why, sizeof(why)),
				 WATCH_EV_NONE);
	}
	assert_false(f->w.said_hello[0]);
	close(s);
}

static void test_ranks_without_progress_are_a_hang(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", NULL }, host[WATCH_HOST_MAX], why[512];

	assert_int_equal(watch_begin(&f->w, 0, nodes, 500, 0), 0);
	node(f, "n1", STALL);
	assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_HANG);
	/* Rank 5 was silent for a minute already: the first to stall. */
	assert_non_null(strstr(why, "the first to stall: rank 5 on n1 (60 s)"));
	assert_null(strstr(why, "rank 4"));
}

/* Strangers that fill every slot, saying nothing: the node still gets in. */
static void test_strangers_cannot_keep_a_node_out(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", NULL }, host[WATCH_HOST_MAX], why[512];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s[40];

	assert_int_equal(watch_begin(&f->w, 0, nodes, 0, 0), 0);
	sa.sin_port = htons((uint16_t)atoi(strrchr(f->w.where, ':') + 1));
	for (size_t i = 0; i < 40; i++) {
		s[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(s[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		watch_ready(&f->w, 0, POLLIN); /* accepted, greeted, waits for a hello */
	}
	assert_true(f->w.nc <= 2 * 1 + 16);
	node(f, "n1", SAY_DONE);
	assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_ALL_DONE);
	for (size_t i = 0; i < 40; i++)
		close(s[i]);
}

/* A rank that has not made its first progress has first_ms: no hang before. */
static void test_a_starting_rank_has_longer(void **state)
{
	struct fx *f = *state;
	char *nodes[] = { "n1", NULL }, host[WATCH_HOST_MAX], why[512];
	long long until;

	assert_int_equal(watch_begin(&f->w, 0, nodes, 500, 120000), 0);
	node(f, "n1", STARTING);
	/* Reported, and no hang: rank 2 has two minutes for its first progress. */
	until = mono_ms() + 10000;
	while (mono_ms() < until && (f->w.nc == 0 || f->w.expect.n == 0 || !f->w.said_hello[0]))
		wait_event(f, host, why, sizeof(why));
	for (until = mono_ms() + 1500; mono_ms() < until;)
		assert_int_equal(wait_event(f, host, why, sizeof(why)), WATCH_EV_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nodes_that_end_say_so, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_node_that_dies_is_lost_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strangers_and_old_attempts_are_not_heard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ranks_without_progress_are_a_hang, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_starting_rank_has_longer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strangers_cannot_keep_a_node_out, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
