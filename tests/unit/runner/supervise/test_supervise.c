/* Unit tests: supervise_run with real worker processes (sh scripts, in
 * tests only): exit status, fail-fast, signal forwarding, SIGURG, no
 * orphans (also when ctrun is SIGKILLed), exec failures, PATH resolution.
 *
 * Each run forks a child playing ctrun: it calls supervise_run with its
 * stdout/stderr in a temp dir and sends the result back on a pipe, so
 * signals can be aimed at it and its own process state stays out of the
 * test runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define CTRTEST_SUPERVISE
#include "ctrtest.h"

static void test_all_workers_exit_zero_gives_status_zero(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 3, "exit 0");
	m = run(&rn, 3);
	assert_int_equal(m.rv, 0);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(m.r.failed_rank, -1);
	assert_int_equal(m.r.got_signal, 0);
	assert_false(m.r.peer_failed);
}

/* Rank 1 exits 3; ranks 0 and 2 would sleep 30 s, each with a background
 * grandchild.  Status 3, fast, and nothing of theirs left. */
static void test_first_failure_stops_the_others_fast(void **state)
{
	const char *script = "sleep 30 & echo $! > $TDIR/gc$RANK; echo $$ > $TDIR/pid$RANK;"
			     "if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; wait";
	pid_t pids[6];
	long long t0;
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 3, script);
	t0 = mono_ms();
	start(&rn, 3);
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "pid%d", i);
		pids[i] = read_pid(&rn, name);
		snprintf(name, sizeof(name), "gc%d", i);
		pids[3 + i] = read_pid(&rn, name);
	}
	m = finish_result(&rn);
	assert_true(mono_ms() - t0 < HANG_GUARD_MS);
	for (int i = 0; i < 6; i++)
		assert_true(gone(pids[i]));
	reap_child(&rn);
	assert_int_equal(m.r.status, 3);
	assert_int_equal(m.r.failed_rank, 1);
	assert_int_equal(m.r.exit_code, 3);
	assert_int_equal(m.r.term_signal, 0);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "ctrun: rank 1 on host testhost failed first: "
				    "exited with status 3\n"));
	free(err);
}

static void test_worker_killed_by_signal_gives_128_plus_n(void **state)
{
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 2, "if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 30");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 137);
	assert_int_equal(m.r.failed_rank, 1);
	assert_int_equal(m.r.term_signal, 9);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "rank 1 on host testhost failed first: "
				    "killed by signal 9 (Killed)\n"));
	free(err);
}

static void test_worker_exiting_zero_does_not_stop_the_others(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "if [ $RANK = 1 ]; then sleep 0.5; touch $TDIR/late; fi; exit 0");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(access(path_in(&rn, "late"), F_OK), 0);
}

/* A worker that ignores SIGTERM is SIGKILLed after the grace period. */
static void test_worker_ignoring_sigterm_is_killed_after_grace(void **state)
{
	const char *script = "if [ $RANK = 0 ]; then sleep 0.2; exit 4; fi;"
			     "trap '' TERM; echo $$ > $TDIR/pid1; while :; do sleep 0.05; done";
	long long t0;
	struct msg m;
	pid_t pid;

	(void)state;
	prepare(&rn, 2, script);
	rn.o.grace_ms = 500;
	t0 = mono_ms();
	start(&rn, 2);
	pid = read_pid(&rn, "pid1");
	m = finish_result(&rn);
	assert_true(mono_ms() - t0 >= 200 + 500);
	assert_true(mono_ms() - t0 < HANG_GUARD_MS);
	assert_true(gone(pid));
	reap_child(&rn);
	assert_int_equal(m.r.status, 4);
	assert_int_equal(m.r.failed_rank, 0);
}

/* Everything exits 0 but leaves a background process: it does not outlive
 * supervise_run, nor does it keep it waiting. */
static void test_leftover_background_process_is_killed_on_success(void **state)
{
	struct msg m;
	long long t0;
	pid_t gc;

	(void)state;
	prepare(&rn, 1, "sleep 30 & echo $! > $TDIR/gc0; exit 0");
	t0 = mono_ms();
	start(&rn, 1);
	gc = read_pid(&rn, "gc0");
	m = finish_result(&rn);
	assert_true(mono_ms() - t0 < HANG_GUARD_MS);
	assert_true(gone(gc));
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
}

static const char *trap_script =
	"trap 'echo $RANK > $TDIR/term$RANK; exit 0' TERM;"
	"trap 'echo $RANK > $TDIR/usr$RANK' USR1;"
	"echo $$ > $TDIR/ready$RANK;"
	"while [ ! -e $TDIR/stop ]; do sleep 0.05; done";

static void test_sigterm_is_forwarded_to_every_worker(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, trap_script);
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGTERM);
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(access(path_in(&rn, "term0"), F_OK), 0);
	assert_int_equal(access(path_in(&rn, "term1"), F_OK), 0);
	assert_int_equal(m.r.got_signal, SIGTERM);
	assert_int_equal(m.r.status, 0); /* they trapped it and exited 0 */
}

static void test_sigterm_untrapped_gives_143(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "echo $$ > $TDIR/ready$RANK; exec sleep 30");
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGTERM);
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.got_signal, SIGTERM);
	assert_int_equal(m.r.status, 143);
	assert_int_equal(m.r.term_signal, SIGTERM);
}

static void test_sigusr1_is_forwarded_and_supervision_continues(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, trap_script);
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGUSR1);
	assert_true(wait_file(&rn, "usr0", 5000));
	assert_true(wait_file(&rn, "usr1", 5000));
	touch(path_in(&rn, "stop"));
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.got_signal, 0);
	assert_int_equal(m.r.status, 0);
	assert_int_not_equal(access(path_in(&rn, "term0"), F_OK), 0);
}

static void test_sigurg_means_peer_failed_and_stops_workers(void **state)
{
	struct msg m;
	long long t0;

	(void)state;
	prepare(&rn, 2, "echo $$ > $TDIR/ready$RANK; exec sleep 30");
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	t0 = mono_ms();
	kill(rn.pid, SIGURG);
	m = finish_result(&rn);
	assert_true(mono_ms() - t0 < HANG_GUARD_MS);
	reap_child(&rn);
	assert_true(m.r.peer_failed);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(m.r.failed_rank, -1);
	assert_int_equal(m.r.got_signal, 0);
}

/* The callback plays node mode's scancel --signal=URG, which reaches this
 * ctrun too: that SIGURG must not hide the local root cause. */
static pid_t cancel_step(void *arg)
{
	int fd = open((const char *)arg, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd >= 0) {
		(void)!write(fd, "x", 1);
		close(fd);
	}
	kill(getpid(), SIGURG);
	return 0;
}

/* The callback's helper (node mode's scancel) runs while the supervisor
 * goes on draining the workers: here it waits until rank 0 has written
 * 1 MiB after the failure (far more than a pipe holds) and finished. */
static pid_t start_helper(void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "i=0; until [ -e \"$0/r0_done\" ] || [ $i -ge 1000 ]; do "
		      "i=$((i+1)); sleep 0.01; done; [ -e \"$0/r0_done\" ] && touch \"$0/helper_saw\"",
		      (const char *)arg, (char *)NULL);
		_exit(127);
	}
	return pid > 0 ? pid : 0;
}

static void test_first_failure_helper_runs_while_output_drains(void **state)
{
	struct msg m;

	(void)state;
	/* Rank 1 fails once rank 0 ignores SIGTERM (else the stop could end
	 * rank 0 before its trap is set). */
	prepare(&rn, 2, "if [ $RANK = 1 ]; then i=0; until [ -e $TDIR/r0_ready ] || [ $i -ge 1000 ];"
			" do i=$((i+1)); sleep 0.01; done; exit 4; fi; trap '' TERM; touch $TDIR/r0_ready;"
			"head -c 1048576 /dev/zero | tr '\\0' x; echo; touch $TDIR/r0_done");
	rn.o.on_first_failure = start_helper;
	rn.o.arg = rn.dir;
	rn.o.grace_ms = 8000;
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 4);
	assert_int_equal(access(path_in(&rn, "helper_saw"), F_OK), 0);
}

/* A grandchild that left its worker's process group (setsid) is ended
 * with the rest, not only reaped (standalone mode has no cgroup). */
static void test_setsid_grandchild_is_killed_too(void **state)
{
	struct msg m;
	pid_t gc;

	(void)state;
	prepare(&rn, 1, "setsid sleep 300 & p=$!; i=0;"
			" until [ \"$(ps -o sid= -p $p | tr -d ' ')\" = \"$p\" ] || [ $i -ge 500 ]; do"
			" i=$((i+1)); sleep 0.01; done; echo $p > $TDIR/gc0; exit 0");
	start(&rn, 1);
	gc = read_pid(&rn, "gc0");
	m = finish_result(&rn);
	assert_true(gone(gc));
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
}

static void test_first_failure_callback_runs_once_and_own_sigurg_is_ignored(void **state)
{
	char calls[PATH_MAX];
	struct msg m;
	char *s;

	(void)state;
	prepare(&rn, 3, "if [ $RANK = 2 ]; then exec sleep 30; fi; sleep 0.2; exit 5");
	snprintf(calls, sizeof(calls), "%s/calls", rn.dir);
	rn.o.on_first_failure = cancel_step;
	rn.o.arg = calls;
	m = run(&rn, 3);
	assert_int_equal(m.r.status, 5);
	assert_false(m.r.peer_failed);
	s = slurp(&rn, "calls");
	assert_string_equal(s, "x");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_all_workers_exit_zero_gives_status_zero, teardown),
		cmocka_unit_test_teardown(test_first_failure_stops_the_others_fast, teardown),
		cmocka_unit_test_teardown(test_worker_killed_by_signal_gives_128_plus_n, teardown),
		cmocka_unit_test_teardown(test_worker_exiting_zero_does_not_stop_the_others, teardown),
		cmocka_unit_test_teardown(test_worker_ignoring_sigterm_is_killed_after_grace, teardown),
		cmocka_unit_test_teardown(test_leftover_background_process_is_killed_on_success, teardown),
		cmocka_unit_test_teardown(test_sigterm_is_forwarded_to_every_worker, teardown),
		cmocka_unit_test_teardown(test_sigterm_untrapped_gives_143, teardown),
		cmocka_unit_test_teardown(test_sigusr1_is_forwarded_and_supervision_continues, teardown),
		cmocka_unit_test_teardown(test_sigurg_means_peer_failed_and_stops_workers, teardown),
		cmocka_unit_test_teardown(test_first_failure_helper_runs_while_output_drains, teardown),
		cmocka_unit_test_teardown(test_setsid_grandchild_is_killed_too, teardown),
		cmocka_unit_test_teardown(test_first_failure_callback_runs_once_and_own_sigurg_is_ignored, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
