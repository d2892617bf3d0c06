/* Unit tests: the request (runner/container/ask.c), the one translation of
 * the options into what every phase of a run reads: --image-mode's names,
 * which task saves, a run of ctrun-worker, the GPU default, and the node
 * cache's settings whose failure is kept for the phase that needs them. */
#include "ctrtest.h"

#include "container.h"

static struct ctr_setup *ask_of(struct options *o, long node_rank, long local_rank_base)
{
	static struct ctr_setup c;
	struct topo t = { .node_rank = node_rank, .local_rank_base = local_rank_base };

	memset(&c, 0, sizeof(c));
	ctr_ask_init(&c, o, &t, (char *[]){ "PATH=/bin", NULL }, true);
	return &c;
}

static void test_image_mode_names(void **state)
{
	struct options o;

	(void)state;
	options_init(&o);
	assert_int_equal(ask_of(&o, 0, 0)->ask.image_mode, IMAGE_MODE_AUTO);
	for (const char *const *m = (const char *const[]){ "auto", "mount", "unpack", NULL }; *m;
	     m++) {
		o.image_mode = (char *)*m;
		assert_int_equal(ask_of(&o, 0, 0)->ask.image_mode,
				 **m == 'a' ? IMAGE_MODE_AUTO : **m == 'm' ? IMAGE_MODE_MOUNT
									: IMAGE_MODE_UNPACK);
	}
	o.image_mode = NULL;
	options_free(&o);
}

/* --save: node rank 0's first task saves, no other. */
static void test_only_node_rank_0s_first_task_saves(void **state)
{
	struct options o;

	(void)state;
	options_init(&o);
	assert_false(ask_of(&o, 0, 0)->ask.saves);
	o.save = "/out/x.sqsh";
	assert_true(ask_of(&o, 0, 0)->ask.saves);
	assert_false(ask_of(&o, 1, 0)->ask.saves);
	assert_false(ask_of(&o, 0, 2)->ask.saves);
	o.save = NULL;
	options_free(&o);
}

static void test_worker_runs_and_gpu_default(void **state)
{
	struct options o;
	struct ctr_setup *c;

	(void)state;
	options_init(&o);
	assert_int_equal(strv_push(&o.command, CTR_WORKER_BIN), 0);
	c = ask_of(&o, 0, 0);
	assert_true(c->ask.worker);
	assert_string_equal(c->ask.nv, "auto");
	strv_free(&o.command);
	assert_int_equal(strv_push(&o.command, "python3"), 0);
	assert_false(ask_of(&o, 0, 0)->ask.worker);
	o.nv = "false";
	assert_string_equal(ask_of(&o, 0, 0)->ask.nv, "false");
	o.nv = NULL;
	options_free(&o);
}

/* A [cache] dir too long is no error until a phase needs the cache: an
 * apptainer run of a SIF never does. */
static void test_cache_failure_waits_for_the_phase_that_needs_it(void **state)
{
	static char dir[5000];
	struct options o;
	struct ctr_setup *c;
	struct err e = { 0 };

	(void)state;
	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	options_init(&o);
	o.cache_dir = dir;
	c = ask_of(&o, 0, 0);
	assert_null(c->ask.cache);
	assert_null(ctr_ask_cache(&c->ask, &e));
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "[cache] dir too long");
	o.cache_dir = "/scratch/cache";
	c = ask_of(&o, 0, 0);
	assert_ptr_equal(ctr_ask_cache(&c->ask, &e), &c->cache);
	assert_string_equal(c->ask.cache->dir, "/scratch/cache");
	o.cache_dir = NULL;
	options_free(&o);
}

/* --unshare NS[,NS...]: pyxis's names, each once or more, nothing else. */
static void test_unshare_names(void **state)
{
	struct err e = { 0 };
	unsigned u = 99;

	(void)state;
	assert_int_equal(ctr_unshare_parse(NULL, &u, &e), 0);
	assert_int_equal(u, 0);
	assert_int_equal(ctr_unshare_parse("net", &u, &e), 0);
	assert_int_equal(u, CTR_UNSHARE_NET);
	assert_int_equal(ctr_unshare_parse("uts,ipc,net,ipc", &u, &e), 0);
	assert_int_equal(u, CTR_UNSHARE_NET | CTR_UNSHARE_IPC | CTR_UNSHARE_UTS);
	assert_int_equal(ctr_unshare_parse("net,pid", &u, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--unshare net,pid: unknown namespace 'pid'"));
	assert_int_equal(ctr_unshare_parse("netx", &u, &e), -1);
	assert_non_null(strstr(e.msg, "unknown namespace 'netx'"));
	assert_int_equal(ctr_unshare_parse("ne", &u, &e), -1);
	assert_int_equal(ctr_unshare_parse("", &u, &e), -1);
	assert_non_null(strstr(e.msg, "an empty namespace name"));
	assert_int_equal(ctr_unshare_parse("net,", &u, &e), -1);
	assert_int_equal(ctr_unshare_parse(",net", &u, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_mode_names),
		cmocka_unit_test(test_unshare_names),
		cmocka_unit_test(test_only_node_rank_0s_first_task_saves),
		cmocka_unit_test(test_worker_runs_and_gpu_default),
		cmocka_unit_test(test_cache_failure_waits_for_the_phase_that_needs_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
