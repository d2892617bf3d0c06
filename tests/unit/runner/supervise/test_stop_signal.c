/* Unit tests: supervise_opts.on_stop_signal, how batch mode learns that a
 * node's ctrun was stopped from outside (scancel, preemption, a time
 * limit) rather than by the job's own fail-fast: called once for a stop
 * signal before any failure, or right after a worker died of that same
 * signal (Slurm signals every process of the step); never after a peer's
 * SIGURG or a worker's own failure. */
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
	rn.o.arg = notes;
	start(&rn, n);
}

static char *notes_read(void)
{
	return access(notes, F_OK) == 0 ? slurp(&rn, "notes") : strdup("");
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

static void test_a_worker_killed_by_the_same_signal_first_is_still_noted(void **state)
{
	char *s;
	pid_t w0;

	(void)state;
	setup_run(2, "if [ $RANK = 0 ]; then echo $$ > $TDIR/ready0; exec sleep 30; fi;"
		     "trap 'echo 1 > $TDIR/term1; sleep 1; exit 0' TERM;"
		     "echo $$ > $TDIR/ready1; while :; do sleep 0.05; done");
	w0 = read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(w0, SIGTERM); /* Slurm's signal reaches the worker first */
	assert_true(wait_file(&rn, "term1", 5000));
	kill(rn.pid, SIGTERM); /* then ctrun */
	finish_result(&rn);
	reap_child(&rn);
	s = notes_read();
	assert_string_equal(s, "15 ");
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
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_a_signal_from_outside_is_noted_once, teardown),
		cmocka_unit_test_teardown(test_after_a_peer_failed_a_sigterm_is_not_noted, teardown),
		cmocka_unit_test_teardown(test_a_worker_killed_by_the_same_signal_first_is_still_noted,
					  teardown),
		cmocka_unit_test_teardown(test_after_a_worker_failed_on_its_own_a_sigterm_is_not_noted,
					  teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
