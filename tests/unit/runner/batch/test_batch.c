/* Unit tests: the srun that batch mode runs (batch_srun_argv): one task
 * per node of the job, every CPU the job has on the smallest node, the
 * user's words after ctrun's own path, untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"

static void test_one_task_per_node_with_the_jobs_cpus(void **state)
{
	char *env[] = { "SLURM_JOB_CPUS_PER_NODE=16(x2),8", NULL };
	char *words[] = { "--nproc-per-node", "2", "train.py", "--lr", "it's $HOME", NULL };
	const char *want[] = { "srun", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1",
			       "--kill-on-bad-exit=1", "--cpus-per-task=8", "--export=ALL",
			       "/opt/ctrun/bin/ctrun", "--nproc-per-node", "2", "train.py", "--lr",
			       "it's $HOME", NULL };
	struct options o;
	struct topo t = { .nnodes = 3 };
	struct strv argv = { 0 };
	struct err e = { 0 };
	size_t i;

	(void)state;
	options_init(&o);
	for (i = 0; words[i] != NULL; i++)
		assert_int_equal(strv_push(&o.args, words[i]), 0);
	assert_int_equal(batch_srun_argv(&o, &t, env, "/opt/ctrun/bin/ctrun", NULL, &argv, &e), 0);
	for (i = 0; want[i] != NULL; i++) {
		assert_true(i < argv.n);
		assert_string_equal(argv.v[i], want[i]);
	}
	assert_int_equal(argv.n, i);
	strv_free(&argv);
	options_free(&o);
}

static void test_no_cpu_count_leaves_it_to_slurm(void **state)
{
	char *env[] = { NULL };
	struct options o;
	struct topo t = { .nnodes = 2 };
	struct strv argv = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	assert_int_equal(batch_srun_argv(&o, &t, env, "/x/ctrun", NULL, &argv, &e), 0);
	for (size_t i = 0; i < argv.n; i++)
		assert_null(strstr(argv.v[i], "--cpus-per-task"));
	strv_free(&argv);
	options_free(&o);
}

static void test_bad_cpu_count_is_named(void **state)
{
	char *env[] = { "SLURM_JOB_CPUS_PER_NODE=8(x", NULL };
	struct options o;
	struct topo t = { .nnodes = 2 };
	struct strv argv = { 0 };
	struct err e = { 0 };

	(void)state;
	options_init(&o);
	assert_int_equal(batch_srun_argv(&o, &t, env, "/x/ctrun", NULL, &argv, &e), -1);
	assert_non_null(strstr(e.msg, "SLURM_JOB_CPUS_PER_NODE"));
	strv_free(&argv);
	options_free(&o);
}

/* A restart on the nodes the plan chose: exactly those, sharing them with
 * the lost node's step that lingers until Slurm notices its node. */
static void test_a_restart_names_its_nodes_and_overlaps(void **state)
{
	char *env[] = { "SLURM_JOB_CPUS_PER_NODE=8(x3)", NULL };
	char *nodes[] = { "n1", "n3", NULL };
	const char *want[] = { "srun", "--overlap", "--nodes=2", "--ntasks=2",
			       "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--nodelist=n1,n3",
			       "--cpus-per-task=8", "--export=ALL", "/x/ctrun", "train.py", NULL };
	struct batch_on on = { .nodes = nodes, .overlap = true };
	struct options o;
	struct topo t = { .nnodes = 3 };
	struct strv argv = { 0 };
	struct err e = { 0 };
	size_t i;

	(void)state;
	options_init(&o);
	assert_int_equal(strv_push(&o.args, "train.py"), 0);
	assert_int_equal(batch_srun_argv(&o, &t, env, "/x/ctrun", &on, &argv, &e), 0);
	for (i = 0; want[i] != NULL; i++) {
		assert_true(i < argv.n);
		assert_string_equal(argv.v[i], want[i]);
	}
	assert_int_equal(argv.n, i);
	strv_free(&argv);
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_task_per_node_with_the_jobs_cpus),
		cmocka_unit_test(test_no_cpu_count_leaves_it_to_slurm),
		cmocka_unit_test(test_bad_cpu_count_is_named),
		cmocka_unit_test(test_a_restart_names_its_nodes_and_overlaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
