/* Unit tests: a hang judged by a ctrun that runs every worker of the job
 * (hangwatch.h): only when every worker is past its bound, the longer one
 * for a worker that has not made its first progress yet; under the user's
 * own srun (part of a job) nothing is tracked. */
#include "ctrtest.h"

#include "hangwatch.h"

static void local_watch(struct hangwatch *h, long sec, long first)
{
	struct options o;
	struct topo t = { .host = "h", .world_size = 2, .nproc = 2 };

	options_init(&o);
	o.hang_timeout = sec;
	o.hang_first = first;
	o.quiet = true;
	hangwatch_init(h, &o, &t);
	options_free(&o);
}

static void test_hung_only_when_every_worker_is_past_its_bound(void **state)
{
	struct hangwatch h;
	long ranks[] = { 0, 1 };
	long long silent[] = { 5000, 1000 };
	bool started[] = { true, true };

	(void)state;
	local_watch(&h, 3, 0);
	assert_true(h.on);
	assert_true(h.local);
	assert_false(hangwatch_tick(&h, ranks, silent, started, 2));
	silent[1] = 3000;
	assert_true(hangwatch_tick(&h, ranks, silent, started, 2));
}

static void test_a_worker_before_its_first_progress_has_first(void **state)
{
	struct hangwatch h;
	long ranks[] = { 0, 1 };
	long long silent[] = { 5000, 60000 };
	bool started[] = { true, false };

	(void)state;
	local_watch(&h, 3, 0); /* FIRST: the larger of SEC and HANG_FIRST_MIN */
	assert_false(hangwatch_tick(&h, ranks, silent, started, 2));
	silent[1] = HANG_FIRST_MIN * 1000LL;
	assert_true(hangwatch_tick(&h, ranks, silent, started, 2));
	local_watch(&h, 3, 10); /* SEC:FIRST */
	silent[1] = 10000;
	assert_true(hangwatch_tick(&h, ranks, silent, started, 2));
}

/* Part of a bigger job, no batch ctrun to report to: nothing tracked. */
static void test_nothing_under_the_users_own_srun(void **state)
{
	struct options o;
	struct topo t = { .host = "h", .world_size = 8, .nproc = 2 };
	struct hangwatch h;

	(void)state;
	options_init(&o);
	o.hang_timeout = 3;
	hangwatch_init(&h, &o, &t);
	assert_false(h.on);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung_only_when_every_worker_is_past_its_bound),
		cmocka_unit_test(test_a_worker_before_its_first_progress_has_first),
		cmocka_unit_test(test_nothing_under_the_users_own_srun),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
