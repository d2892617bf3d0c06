/* Unit tests: the notes a node's ctrun leaves for the batch ctrun when it
 * was signalled from outside (batchstop.h), and the job state answer the
 * batch ctrun reads before a restart (squeue_job_state_parse). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "batchstop.h"
#include "step.h"

static void test_a_note_names_the_signal_and_the_host(void **state)
{
	char dir[4096], host[64], sig[16];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(batchstop_dir_make(dir, sizeof(dir), &e), 0);
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 0);
	setenv(BATCHSTOP_ENV, dir, 1);
	batchstop_note(SIGTERM, "n1");
	batchstop_note(SIGINT, "n1"); /* the first one stays */
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 1);
	assert_string_equal(sig, "TERM");
	assert_string_equal(host, "n1");
	/* A note that did not stop the job (batch.c): cleared for the next step. */
	batchstop_clear(dir);
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 0);
	batchstop_note(SIGHUP, "n2");
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 1);
	assert_string_equal(sig, "HUP");
	batchstop_remove(dir);
	assert_int_equal(access(dir, F_OK), -1);
	unsetenv(BATCHSTOP_ENV);
}

static void test_no_note_outside_a_batch_step(void **state)
{
	char dir[4096], host[64], sig[16];
	struct err e = { 0 };

	(void)state;
	unsetenv(BATCHSTOP_ENV);
	assert_int_equal(batchstop_dir_make(dir, sizeof(dir), &e), 0);
	batchstop_note(SIGTERM, "n1");
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 0);
	batchstop_remove(dir);
}

static void test_no_note_into_a_directory_others_can_enter(void **state)
{
	char dir[4096], host[64], sig[16];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(batchstop_dir_make(dir, sizeof(dir), &e), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	setenv(BATCHSTOP_ENV, dir, 1);
	batchstop_note(SIGTERM, "n1");
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 0);
	unsetenv(BATCHSTOP_ENV);
	batchstop_remove(dir);
}

static void test_a_host_name_with_a_slash_stays_in_the_directory(void **state)
{
	char dir[4096], host[64], sig[16];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(batchstop_dir_make(dir, sizeof(dir), &e), 0);
	setenv(BATCHSTOP_ENV, dir, 1);
	batchstop_note(SIGHUP, "../x");
	assert_int_equal(batchstop_read(dir, host, sizeof(host), sig, sizeof(sig)), 1);
	assert_string_equal(sig, "HUP");
	assert_string_equal(host, "node");
	unsetenv(BATCHSTOP_ENV);
	batchstop_remove(dir);
}

static void test_job_state_is_the_one_word_squeue_prints(void **state)
{
	char s[32];

	(void)state;
	assert_int_equal(squeue_job_state_parse("RUNNING\n", s, sizeof(s)), 0);
	assert_string_equal(s, "RUNNING");
	assert_int_equal(squeue_job_state_parse("  COMPLETING \n", s, sizeof(s)), 0);
	assert_string_equal(s, "COMPLETING");
	/* Nothing (a job Slurm no longer lists), two lines, or an error
	 * text: no state known. */
	assert_int_equal(squeue_job_state_parse("", s, sizeof(s)), -1);
	assert_int_equal(squeue_job_state_parse("RUNNING\nPENDING\n", s, sizeof(s)), -1);
	assert_int_equal(squeue_job_state_parse("slurm_load_jobs error: Invalid job id", s,
						sizeof(s)), -1);
	assert_int_equal(squeue_job_state_parse("OUT_OF_MEMORY_AND_A_LONG_NEW_STATE_NAME", s,
						sizeof(s)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_note_names_the_signal_and_the_host),
		cmocka_unit_test(test_no_note_outside_a_batch_step),
		cmocka_unit_test(test_no_note_into_a_directory_others_can_enter),
		cmocka_unit_test(test_a_host_name_with_a_slash_stays_in_the_directory),
		cmocka_unit_test(test_job_state_is_the_one_word_squeue_prints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
