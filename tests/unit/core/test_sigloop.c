/* Unit tests: the one signal loop reads signals from its signalfd (lowest
 * number first, as the kernel queues them), reaps the children it is told
 * of, calls back ready descriptors before or after the signals as asked,
 * honours its timeout, and leaves the signal mask as it found it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sigloop.h"
#include "util.h"

struct seen {
	char order[16]; /* 's' signal, 'f' descriptor, 'x' exit */
	size_t n;
	int sigs[8];
	size_t nsig;
	pid_t pid;
	int ws;
};

static void add(struct seen *s, char c)
{
	if (s->n + 1 < sizeof(s->order))
		s->order[s->n++] = c;
}

static void on_signal(void *arg, int sig)
{
	struct seen *s = arg;

	add(s, 's');
	if (s->nsig < 8)
		s->sigs[s->nsig++] = sig;
}

static void on_exit_cb(void *arg, pid_t pid, int ws)
{
	struct seen *s = arg;

	add(s, 'x');
	s->pid = pid;
	s->ws = ws;
}

static void on_fd(void *arg, size_t k, short revents)
{
	struct seen *s = arg;

	(void)k;
	(void)revents;
	add(s, 'f');
}

static const struct sigloop_ops ops = { on_signal, on_exit_cb, on_fd, NULL };

static void start(struct sigloop *l, unsigned flags, struct seen *s)
{
	struct sigloop_ops o = ops;
	struct err e = { 0 };

	memset(s, 0, sizeof(*s));
	o.arg = s;
	assert_int_equal(sigloop_start(l, flags, &o, &e), 0);
}

static void test_the_six_forwarded_signals_are_listed_once(void **state)
{
	sigset_t set;
	int checkpoints = 0;

	(void)state;
	sigemptyset(&set);
	for (size_t i = 0; i < SIGLOOP_NFORWARDED; i++) {
		assert_false(sigismember(&set, sigloop_forwarded[i]));
		sigaddset(&set, sigloop_forwarded[i]);
		checkpoints += sigloop_is_checkpoint(sigloop_forwarded[i]);
	}
	assert_true(sigismember(&set, SIGTERM) && sigismember(&set, SIGINT) &&
		    sigismember(&set, SIGHUP) && sigismember(&set, SIGQUIT));
	assert_int_equal(checkpoints, 2);
	assert_true(sigloop_is_checkpoint(SIGUSR1) && sigloop_is_checkpoint(SIGUSR2));
	assert_false(sigloop_is_checkpoint(SIGTERM));
}

static void test_signals_are_read_and_the_mask_is_restored(void **state)
{
	struct sigloop l;
	struct seen s;
	sigset_t before, after;

	(void)state;
	sigprocmask(SIG_SETMASK, NULL, &before);
	start(&l, SIGLOOP_URG, &s);
	kill(getpid(), SIGUSR2);
	kill(getpid(), SIGURG);
	assert_int_equal(sigloop_wait(&l, NULL, 0, 1000), 0);
	assert_int_equal(s.nsig, 2);
	assert_int_equal(s.sigs[0], SIGUSR2);
	assert_int_equal(s.sigs[1], SIGURG);
	sigloop_close(&l);
	sigprocmask(SIG_SETMASK, NULL, &after);
	assert_int_equal(sigismember(&after, SIGUSR2), sigismember(&before, SIGUSR2));
	assert_int_equal(sigismember(&after, SIGCHLD), sigismember(&before, SIGCHLD));
}

/* A child that exits at once with code. */
static pid_t exiting_child(int code)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(code);
	return pid;
}

static void test_reaps_the_child_it_was_given(void **state)
{
	struct sigloop l;
	struct seen s;
	pid_t pid;

	(void)state;
	start(&l, 0, &s);
	pid = exiting_child(7);
	assert_int_equal(sigloop_add_child(&l, pid), 0);
	for (int i = 0; i < 100 && s.pid == 0; i++)
		assert_int_equal(sigloop_wait(&l, NULL, 0, 100), 0);
	assert_int_equal(s.pid, pid);
	assert_true(WIFEXITED(s.ws) && WEXITSTATUS(s.ws) == 7);
	sigloop_close(&l);
}

/* A child it was not told of is the caller's to reap. */
static void test_leaves_other_children_alone(void **state)
{
	struct sigloop l;
	struct seen s;
	pid_t pid;
	int ws;

	(void)state;
	start(&l, 0, &s);
	pid = exiting_child(3);
	assert_int_equal(sigloop_wait(&l, NULL, 0, 2000), 0);
	assert_int_equal(s.pid, 0);
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_int_equal(WEXITSTATUS(ws), 3);
	sigloop_close(&l);
}

/* The supervisor and the agent's shim (PID 1) reap whatever ends. */
static void test_reap_any_reaps_every_child(void **state)
{
	struct sigloop l;
	struct seen s;

	(void)state;
	start(&l, SIGLOOP_REAP_ANY, &s);
	exiting_child(1);
	exiting_child(2);
	for (int i = 0; i < 100 && s.n < 2; i++)
		assert_int_equal(sigloop_wait(&l, NULL, 0, 100), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal((s.order[2] = '\0', s.order), "xx");
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	sigloop_close(&l);
}

static void test_descriptors_before_or_after_signals(void **state)
{
	unsigned flags[] = { 0, SIGLOOP_FDS_FIRST };
	const char *want[] = { "sf", "fs" };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct sigloop l;
		struct seen s;
		int p[2];
		struct pollfd pfd;

		assert_int_equal(pipe(p), 0);
		start(&l, flags[i], &s);
		assert_int_equal(write(p[1], "x", 1), 1);
		kill(getpid(), SIGUSR1);
		pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
		assert_int_equal(sigloop_wait(&l, &pfd, 1, 1000), 0);
		assert_true(pfd.revents & POLLIN);
		s.order[s.n] = '\0';
		assert_string_equal(s.order, want[i]);
		sigloop_close(&l);
		close(p[0]);
		close(p[1]);
	}
}

static void test_times_out_with_nothing_to_do(void **state)
{
	struct sigloop l;
	struct seen s;
	struct pollfd pfd = { .fd = -1, .events = POLLIN };
	long long t0;

	(void)state;
	start(&l, 0, &s);
	t0 = mono_ms();
	assert_int_equal(sigloop_wait(&l, &pfd, 1, 30), 0);
	assert_true(mono_ms() - t0 >= 25);
	assert_int_equal(s.n, 0);
	assert_int_equal(sigloop_next(&l), 0);
	sigloop_close(&l);
}

/* nohup's SIGHUP stays ignored where the caller asks. */
static void test_an_ignored_signal_stays_ignored(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	struct sigloop l;
	struct seen s;

	(void)state;
	sigaction(SIGHUP, &ign, &old);
	start(&l, SIGLOOP_KEEP_IGNORED, &s);
	assert_false(sigismember(&l.set, SIGHUP));
	assert_true(sigismember(&l.set, SIGTERM));
	assert_false(sigismember(&l.set, SIGURG));
	sigloop_close(&l);
	start(&l, 0, &s);
	assert_true(sigismember(&l.set, SIGHUP));
	sigloop_close(&l);
	sigaction(SIGHUP, &old, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_six_forwarded_signals_are_listed_once),
		cmocka_unit_test(test_signals_are_read_and_the_mask_is_restored),
		cmocka_unit_test(test_reaps_the_child_it_was_given),
		cmocka_unit_test(test_leaves_other_children_alone),
		cmocka_unit_test(test_reap_any_reaps_every_child),
		cmocka_unit_test(test_descriptors_before_or_after_signals),
		cmocka_unit_test(test_times_out_with_nothing_to_do),
		cmocka_unit_test(test_an_ignored_signal_stays_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
