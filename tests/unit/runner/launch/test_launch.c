/* Unit tests: this node's part of a run (launch.h): the worker argv of a
 * .py command, even CPU shares, and whole runs of real workers through
 * launch_local (restarts, the run function, --dry-run). */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "launch.h"

static void test_python_script_runs_under_the_interpreter(void **state)
{
	struct options o;
	struct strv argv = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	strv_push(&o.command, "train.py");
	strv_push(&o.command, "--epochs");
	assert_int_equal(launch_command(&o, &argv, &e), 0);
	assert_int_equal(argv.n, 3);
	assert_string_equal(argv.v[0], "python3");
	assert_string_equal(argv.v[1], "train.py");
	strv_free(&argv);
	o.python = strdup("/usr/bin/python3");
	assert_int_equal(launch_command(&o, &argv, &e), 0);
	assert_string_equal(argv.v[0], "/usr/bin/python3");
	strv_free(&argv);
	o.no_python = true;
	assert_int_equal(launch_command(&o, &argv, &e), 0);
	assert_string_equal(argv.v[0], "train.py");
	strv_free(&argv);
	strv_free(&o.command);
	assert_int_equal(launch_command(&o, &argv, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	options_free(&o);
}

static void test_cpu_shares_are_even_contiguous_and_disjoint(void **state)
{
	cpu_set_t all, share, seen;

	(void)state;
	CPU_ZERO(&all);
	CPU_ZERO(&seen);
	for (size_t c = 0; c < 16; c += 2)
		CPU_SET(c, &all); /* 8 CPUs: 0,2,...,14 */
	for (long i = 0; i < 4; i++) {
		assert_true(launch_cpu_share(&all, i, 4, &share));
		assert_int_equal(CPU_COUNT(&share), 2);
		assert_true(CPU_ISSET((size_t)(4 * i), &share) && CPU_ISSET((size_t)(4 * i + 2), &share));
		CPU_AND(&share, &share, &seen);
		assert_int_equal(CPU_COUNT(&share), 0);
		assert_true(launch_cpu_share(&all, i, 4, &share));
		CPU_OR(&seen, &seen, &share);
	}
	assert_true(CPU_EQUAL(&seen, &all));
	/* Fewer CPUs than workers, or one worker: inherit. */
	assert_false(launch_cpu_share(&all, 0, 9, &share));
	assert_false(launch_cpu_share(&all, 0, 1, &share));
}

/* A run function that fails its first two calls, then succeeds. */
static int calls;
static int flaky(const struct options *o, struct topo *t, char *const *envp,
		 const struct strv *argv, long restart, struct supervise_result *r, struct err *e)
{
	(void)o, (void)t, (void)envp, (void)argv, (void)e;
	assert_int_equal(restart, calls);
	*r = (struct supervise_result){ .status = calls < 2 ? 3 : 0, .failed_rank = 0 };
	calls++;
	return 0;
}

static struct topo standalone(void)
{
	static char host[] = "h", job[] = "none", addr[] = "127.0.0.1";

	return (struct topo){ .mode = MODE_STANDALONE, .nnodes = 1, .nproc = 1, .world_size = 1,
			      .local_world_size = 1, .master_port = 29500, .host = host,
			      .job_id = job, .master_addr = addr };
}

static void test_restarts_call_the_run_function_again_until_it_succeeds(void **state)
{
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct options o;
	struct topo t = standalone();
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	o.quiet = true;
	strv_push(&o.command, "true");
	o.max_restarts = 1;
	calls = 0;
	assert_int_equal(launch_local(&o, &t, envp, flaky, &e), 3); /* out of restarts */
	assert_int_equal(calls, 2);
	o.max_restarts = 5;
	calls = 0;
	assert_int_equal(launch_local(&o, &t, envp, flaky, &e), 0);
	assert_int_equal(calls, 3);
	options_free(&o);
}

static void test_missing_command_fails_before_the_run_function(void **state)
{
	char *envp[] = { "PATH=/nonexistent", NULL };
	struct options o;
	struct topo t = standalone();
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	strv_push(&o.command, "no-such-command-xyz");
	calls = 0;
	assert_int_equal(launch_local(&o, &t, envp, flaky, &e), -1);
	assert_int_equal(e.code, EXIT_NOTFOUND);
	assert_int_equal(calls, 0);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_script_runs_under_the_interpreter),
		cmocka_unit_test(test_cpu_shares_are_even_contiguous_and_disjoint),
		cmocka_unit_test(test_restarts_call_the_run_function_again_until_it_succeeds),
		cmocka_unit_test(test_missing_command_fails_before_the_run_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
