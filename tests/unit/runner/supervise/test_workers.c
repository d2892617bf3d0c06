/* Unit tests: starting the workers: exec failures (126, 127), a process group each, stdin, inherited stdout, CPU affinity, log directories, ctrun's own failure after some started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define CTRTEST_SUPERVISE
#include "ctrtest.h"

static void test_exec_of_missing_command_gives_127(void **state)
{
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 1, "");
	rn.argv[0][0] = "/nonexistent/ctrun-no-such-command";
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 127);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "cannot execute /nonexistent/ctrun-no-such-command"));
	free(err);
}

static void test_exec_of_non_executable_file_gives_126(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 1, "");
	touch(path_in(&rn, "data"));
	rn.argv[0][0] = strdup(path_in(&rn, "data"));
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 126);
	free(rn.argv[0][0]);
}

static void test_each_worker_leads_its_own_process_group(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "read -r _ _ _ _ pg _ < /proc/$$/stat; [ \"$pg\" = \"$$\" ] || exit 9");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
}

static void test_stdin_is_dev_null_with_several_workers(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "[ \"$(readlink /proc/self/fd/0)\" = /dev/null ] || exit 9");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
}

static void test_without_prefix_or_logs_workers_inherit_stdout(void **state)
{
	char script[PATH_MAX + 64];
	struct msg m;

	(void)state;
	prepare(&rn, 1, "");
	snprintf(script, sizeof(script), "[ \"$(readlink /proc/$$/fd/1)\" = %s/out ] || exit 9",
		 rn.dir);
	rn.argv[0][2] = script;
	rn.o.prefix = false;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
}

static void test_cpu_affinity_is_applied_in_the_worker(void **state)
{
	struct msg m;
	char *out;

	(void)state;
	prepare(&rn, 1, "grep Cpus_allowed_list /proc/self/status");
	CPU_ZERO(&rn.cpus);
	CPU_SET(0, &rn.cpus);
	rn.w[0].cpus = &rn.cpus;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	out = slurp(&rn, "out");
	assert_string_equal(out, "[rank0]: Cpus_allowed_list:\t0\n");
	free(out);
}

static void test_unusable_log_dir_is_ctrun_failure(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 1, "touch $TDIR/ran");
	rn.o.log_dir = "/dev/null/logs";
	m = run(&rn, 1);
	assert_int_equal(m.rv, -1);
	assert_int_equal(m.e.code, EXIT_CTRUN);
	assert_non_null(strstr(m.e.msg, "/dev/null/logs"));
	assert_int_not_equal(access(path_in(&rn, "ran"), F_OK), 0);
}

/* Running out of descriptors half way is ctrun's failure (125): the
 * workers already started are killed, and are not reported as failing. */
static void test_own_failure_after_some_workers_started_kills_them(void **state)
{
	long long t0;
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 4, "exec sleep 30");
	rn.o.prefix = true;
	rn.nofile = 16; /* room for the first worker's pipes, not the fourth's */
	t0 = mono_ms();
	m = run(&rn, 4);
	assert_true(mono_ms() - t0 < HANG_GUARD_MS);
	assert_int_equal(m.rv, -1);
	assert_int_equal(m.e.code, EXIT_CTRUN);
	assert_non_null(strstr(m.e.msg, ": pipe: "));
	assert_int_equal(m.r.failed_rank, -1);
	err = slurp(&rn, "err");
	assert_null(strstr(err, "failed first"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exec_of_missing_command_gives_127, teardown),
		cmocka_unit_test_teardown(test_exec_of_non_executable_file_gives_126, teardown),
		cmocka_unit_test_teardown(test_each_worker_leads_its_own_process_group, teardown),
		cmocka_unit_test_teardown(test_stdin_is_dev_null_with_several_workers, teardown),
		cmocka_unit_test_teardown(test_without_prefix_or_logs_workers_inherit_stdout, teardown),
		cmocka_unit_test_teardown(test_cpu_affinity_is_applied_in_the_worker, teardown),
		cmocka_unit_test_teardown(test_unusable_log_dir_is_ctrun_failure, teardown),
		cmocka_unit_test_teardown(test_own_failure_after_some_workers_started_kills_them, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
