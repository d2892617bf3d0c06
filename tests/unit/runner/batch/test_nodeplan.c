/* Unit tests: the nodes of each batch-mode attempt (nodeplan.h): spares
 * take a lost node's rank, an elastic world closes ranks when no spare is
 * left, and input that cannot work is refused in one line. */
#include "ctrtest.h"

#include "nodeplan.h"

static char *job3[] = { "n1", "n2", "n3", NULL };
static char *job4[] = { "n1", "n2", "n3", "n4", NULL };

/* The attempt's nodes as "a,b,c". */
static const char *joined(const struct strv *s)
{
	static char buf[256];

	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? "," : "",
			 s->v[i]);
	return buf;
}

static void next_is(struct nodeplan *p, const char *want)
{
	struct strv order = { 0 };
	char why[256] = "";

	assert_int_equal(nodeplan_next(p, &order, why, sizeof(why)), 0);
	assert_string_equal(joined(&order), want);
	strv_free(&order);
}

static void test_every_node_trains_without_spares(void **state)
{
	struct nodeplan p;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(nodeplan_init(&p, job3, 0, -1, -1, &e), 0);
	assert_false(nodeplan_resilient(&p));
	next_is(&p, "n1,n2,n3");
	next_is(&p, "n1,n2,n3"); /* a failure that left no node out: the same nodes */
	nodeplan_free(&p);
}

static void test_a_spare_takes_the_lost_nodes_rank(void **state)
{
	struct nodeplan p;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(nodeplan_init(&p, job4, 1, -1, -1, &e), 0);
	assert_true(nodeplan_resilient(&p));
	next_is(&p, "n1,n2,n3");
	assert_int_equal(nodeplan_leave_out(&p, "n2", "lost"), 0);
	/* n4 becomes node rank 1; n3 stays rank 2. */
	next_is(&p, "n1,n4,n3");
	assert_string_equal(nodeplan_at(&p, 1), "n4");
	nodeplan_free(&p);
}

static void test_no_spare_left_fails_a_fixed_count(void **state)
{
	struct nodeplan p;
	struct strv order = { 0 };
	struct err e = { 0 };
	char why[256] = "";

	(void)state;
	assert_int_equal(nodeplan_init(&p, job3, 1, -1, -1, &e), 0);
	next_is(&p, "n1,n2");
	nodeplan_leave_out(&p, "n2", "lost");
	next_is(&p, "n1,n3");
	nodeplan_leave_out(&p, "n1", "lost");
	assert_int_equal(nodeplan_next(&p, &order, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "1 usable node left, and the run needs 2"));
	assert_non_null(strstr(why, "no spare left"));
	strv_free(&order);
	nodeplan_free(&p);
}

static void test_elastic_world_shrinks_to_min(void **state)
{
	struct nodeplan p;
	struct strv order = { 0 };
	struct err e = { 0 };
	char why[256] = "";

	(void)state;
	assert_int_equal(nodeplan_init(&p, job3, 0, 1, 3, &e), 0);
	next_is(&p, "n1,n2,n3");
	nodeplan_leave_out(&p, "n2", "lost");
	/* The others close ranks, in their order. */
	next_is(&p, "n1,n3");
	nodeplan_leave_out(&p, "n1", "unhealthy");
	next_is(&p, "n3");
	nodeplan_leave_out(&p, "n3", "lost");
	assert_int_equal(nodeplan_next(&p, &order, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "0 usable nodes left, and the run needs 1 (--nnodes MIN)"));
	strv_free(&order);
	nodeplan_free(&p);
}

/* torchrun's standby nodes: beyond MAX, a node waits as a spare. */
static void test_nodes_beyond_max_wait_as_spares(void **state)
{
	struct nodeplan p;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(nodeplan_init(&p, job3, 0, 1, 2, &e), 0);
	assert_true(nodeplan_resilient(&p));
	next_is(&p, "n1,n2");
	nodeplan_leave_out(&p, "n1", "lost");
	next_is(&p, "n3,n2");
	nodeplan_leave_out(&p, "n2", "lost");
	next_is(&p, "n3");
	nodeplan_free(&p);
}

/* A node out before the first attempt (its health check): the next one fills in. */
static void test_unhealthy_before_the_first_attempt(void **state)
{
	struct nodeplan p;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(nodeplan_init(&p, job4, 1, -1, -1, &e), 0);
	nodeplan_leave_out(&p, "n2", "no GPU 1");
	next_is(&p, "n1,n3,n4");
	assert_false(nodeplan_usable(&p, 1));
	assert_int_equal(nodeplan_leave_out(&p, "n9", "x"), -1);
	nodeplan_free(&p);
}

static void refused(long spares, long min, long max, const char *want)
{
	struct nodeplan p;
	struct err e = { 0 };

	assert_int_equal(nodeplan_init(&p, job3, spares, min, max, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (strstr(e.msg, want) == NULL)
		fail_msg("'%s' does not say '%s'", e.msg, want);
	nodeplan_free(&p);
}

static void test_bad_input_is_refused_in_one_line(void **state)
{
	(void)state;
	refused(3, -1, -1, "--spares 3: the job has 3 nodes and at least one must train");
	refused(5, -1, -1, "ask sbatch for 6 nodes or more");
	refused(0, 2, 4, "--nnodes 2:4: the job has only 3 nodes");
	refused(0, 4, 4, "--nnodes 4: the job has only 3 nodes");
	refused(1, 1, 3, "--nnodes 1:3 with --spares 1: the job's 3 nodes leave 2 to train");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_node_trains_without_spares),
		cmocka_unit_test(test_a_spare_takes_the_lost_nodes_rank),
		cmocka_unit_test(test_no_spare_left_fails_a_fixed_count),
		cmocka_unit_test(test_elastic_world_shrinks_to_min),
		cmocka_unit_test(test_nodes_beyond_max_wait_as_spares),
		cmocka_unit_test(test_unhealthy_before_the_first_attempt),
		cmocka_unit_test(test_bad_input_is_refused_in_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
