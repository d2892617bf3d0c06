/* Unit tests: supervise_opts.on_stop_signal, how batch mode learns that a
 * node's ctrun was stopped from outside (scancel, preemption, a time
 * limit) rather than by the job's own fail-fast: called once for a stop
 * signal before any failure, or after a worker died of that same signal
 * (Slurm signals every process of the step in no fixed order); never
 * after a peer's SIGURG or a worker's own failure.  And on_first_failure
 * for such a death: none when ctrun's own copy of the signal comes within
 * SUPERVISE_STOP_WAIT_MS (the death is the stop's), else after that wait. */
#include <errno.h>
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

/* Appends "<sig> " to the file arg names: what the test reads back. */
static void note_stop(void *arg, int sig)
{
	FILE *f = fopen((const char *)arg, "a");

	if (f != NULL) {
		fprintf(f, "%d ", sig);
		fclose(f);
	}
}

/* Workers that stay a while after SIGTERM, so ctrun is still there for
 * the signal the test sends it next. */
/* Appends "F " to the same file: the step would be cancelled here. */
static pid_t note_failure(void *arg)
{
	note_stop(arg, 0);
	return 0;
}

/* Until ctrun has reaped pid (a zombie is not reaped yet), polled as
 * wait_file does; false after timeout_ms, a guard against a hang. */
static bool wait_reaped(pid_t pid, int timeout_ms)
{
	long long end = mono_ms() + timeout_ms;

	while (kill(pid, 0) == 0 || errno != ESRCH) {
		if (mono_ms() > end)
			return false;
		usleep(1000);
	}
	return true;
}

static const char *lingering =
	"trap 'echo $RANK > $TDIR/term$RANK; sleep 1; exit 0' TERM;"
	"echo $$ > $TDIR/ready$RANK;"
	"while :; do sleep 0.05; done";

static char notes[PATH_MAX];

static void setup_run(size_t n, const char *script)
{
	prepare(&rn, n, script);
	snprintf(notes, sizeof(notes), "%s/notes", rn.dir);
	rn.o.on_stop_signal = note_stop;
	rn.o.on_first_failure = note_failure;
	rn.o.arg = notes;
	start(&rn, n);
}

/* What the callbacks wrote: "15 " for on_stop_signal(SIGTERM), "0 " for
 * on_first_failure. */
static char *notes_read(void)
{
	return access(notes, F_OK) == 0 ? slurp(&rn, "notes") : strdup("");
}

/* Rank 0 a plain process to kill, rank 1 (if any) one that says when it
 * gets SIGTERM and lingers. */
static const char *killable =
	"if [ $RANK = 0 ]; then echo $$ > $TDIR/ready0; exec sleep 30; fi;"
	"trap 'echo 1 > $TDIR/term1; sleep 1; exit 0' TERM;"
	"echo $$ > $TDIR/ready1; while :; do sleep 0.05; done";

/* Starts n killable workers and kills rank 0 with SIGTERM, as Slurm's
 * signal reaching it before ctrun's copy; *t0 is when.  Its pid. */
static pid_t kill_rank0_first(size_t n, long long *t0)
{
	pid_t w0;

	setup_run(n, killable);
	w0 = read_pid(&rn, "ready0");
	if (n > 1)
		read_pid(&rn, "ready1");
	*t0 = mono_ms();
	kill(w0, SIGTERM);
	return w0;
}

/* After ctrun ended: the callbacks wrote want, rank 0 is the result's
 * rank that died (of SIGTERM) first, ctrun got got, and the first failure
 * was named or not. */
static void ended(const char *want, int got, bool named)
{
	struct msg m = finish_result(&rn);
	char *s;

	reap_child(&rn);
	s = notes_read();
	assert_string_equal(s, want);
	free(s);
	assert_int_equal(m.rv, 0);
	assert_int_equal(m.r.got_signal, got);
	assert_int_equal(m.r.failed_rank, 0);
	assert_int_equal(m.r.term_signal, SIGTERM);
	assert_int_equal(m.r.status, 128 + SIGTERM);
	s = slurp(&rn, "err");
	if (named)
		assert_non_null(strstr(s, "ctrun: rank 0 on host testhost failed first: killed by "
					  "signal 15"));
	else
		assert_null(strstr(s, "failed first"));
	free(s);
}

/* Slurm's SIGTERM reaches the only worker, which dies of it, and ctrun
 * reaps it before its own copy comes: no failure, no step cancel, and
 * ctrun is still there to note the stop (it was gone: the CI race of
 * t_batch_cancel's "SIGTERM to the steps only"). */
static void test_the_step_signal_killing_the_worker_first_is_no_failure(void **state)
{
	long long t0;
	char *s;

	(void)state;
	assert_true(wait_reaped(kill_rank0_first(1, &t0), 5000));
	kill(rn.pid, SIGTERM);
	ended("15 ", SIGTERM, false);
	s = slurp(&rn, "err");
	assert_non_null(strstr(s, "ctrun: received SIGTERM; stopping the workers on host testhost"));
	free(s);
}

/* The same with another worker still running: it is stopped by the
 * forwarded signal, not by a fail-fast. */
static void test_the_step_signal_killing_one_worker_first_is_no_failure(void **state)
{
	long long t0;

	(void)state;
	assert_true(wait_reaped(kill_rank0_first(2, &t0), 5000));
	kill(rn.pid, SIGTERM);
	ended("15 ", SIGTERM, false);
	assert_true(access(path_in(&rn, "term1"), F_OK) == 0);
}

/* A worker killed by SIGTERM that ctrun does not get is the first failure
 * once the wait is over (and no sooner); the same signal coming later is
 * still noted as a stop from outside. */
static void test_a_signal_death_ctrun_gets_no_copy_of_fails_after_the_wait(void **state)
{
	long long t0;

	(void)state;
	kill_rank0_first(2, &t0);
	assert_true(wait_file(&rn, "term1", 5000)); /* the fail-fast's SIGTERM */
	assert_true(mono_ms() - t0 >= SUPERVISE_STOP_WAIT_MS);
	kill(rn.pid, SIGTERM);
	ended("0 15 ", SIGTERM, true);
}

/* Waiting for SIGTERM, ctrun gets SIGINT: the worker's SIGTERM was no
 * stop's, so it is the first failure at once, and the INT is no stop from
 * outside either. */
static void test_another_signal_during_the_wait_makes_the_death_a_failure(void **state)
{
	long long t0;

	(void)state;
	assert_true(wait_reaped(kill_rank0_first(2, &t0), 5000));
	kill(rn.pid, SIGINT);
	ended("0 ", SIGINT, true);
}

static void test_a_signal_from_outside_is_noted_once(void **state)
{
	char *s;

	(void)state;
	setup_run(2, lingering);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGTERM);
	assert_true(wait_file(&rn, "term0", 5000));
	kill(rn.pid, SIGTERM); /* asked again */
	finish_result(&rn);
	reap_child(&rn);
	s = notes_read();
	assert_string_equal(s, "15 ");
	free(s);
}

static void test_after_a_peer_failed_a_sigterm_is_not_noted(void **state)
{
	char *s;

	(void)state;
	setup_run(2, lingering);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGURG);
	assert_true(wait_file(&rn, "term0", 5000)); /* the peer's failure was handled */
	kill(rn.pid, SIGTERM); /* srun --kill-on-bad-exit's, after the failure */
	finish_result(&rn);
	reap_child(&rn);
	s = notes_read();
	assert_string_equal(s, "");
	free(s);
}

static void test_after_a_worker_failed_on_its_own_a_sigterm_is_not_noted(void **state)
{
	char *s;

	(void)state;
	setup_run(2, "if [ $RANK = 0 ]; then while [ ! -e $TDIR/ready1 ]; do sleep 0.01; done;"
		     "exit 5; fi;"
		     "trap 'echo 1 > $TDIR/term1; sleep 1; exit 0' TERM;"
		     "echo $$ > $TDIR/ready1; while :; do sleep 0.05; done");
	assert_true(wait_file(&rn, "term1", 5000));
	kill(rn.pid, SIGTERM);
	finish_result(&rn);
	reap_child(&rn);
	s = notes_read();
	assert_string_equal(s, "0 ");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_a_signal_from_outside_is_noted_once, teardown),
		cmocka_unit_test_teardown(test_after_a_peer_failed_a_sigterm_is_not_noted, teardown),
		cmocka_unit_test_teardown(test_the_step_signal_killing_the_worker_first_is_no_failure,
					  teardown),
		cmocka_unit_test_teardown(test_the_step_signal_killing_one_worker_first_is_no_failure,
					  teardown),
		cmocka_unit_test_teardown(test_a_signal_death_ctrun_gets_no_copy_of_fails_after_the_wait,
					  teardown),
		cmocka_unit_test_teardown(test_another_signal_during_the_wait_makes_the_death_a_failure,
					  teardown),
		cmocka_unit_test_teardown(test_after_a_worker_failed_on_its_own_a_sigterm_is_not_noted,
					  teardown),
	};

	/* The ctrun these tests fork must get the SIGINT they send: one
	 * started in the background inherits it ignored and, as a shell's
	 * job, keeps it ignored (SIGLOOP_KEEP_IGNORED). */
	signal(SIGINT, SIG_DFL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
