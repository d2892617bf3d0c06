/* test_apptainer_modes.c - the apptainer/singularity adapter's run modes
 * (issue 24): --writable (--writable-tmpfs, refused by Singularity 3.x),
 * --root (--fakeroot, Singularity 3.x's subordinate ids) and --no-home.
 * The rest of the adapter: test_apptainer.c; the fixture both use is
 * ctrtest.h's CTRTEST_APPTAINER part. */
#define CTRTEST_APPTAINER
#include "ctrtest.h"

/* --writable: --writable-tmpfs; Singularity 3.x without overlay support
 * ignores it with a warning (measured as root with 3.4.2 here), so ctrun
 * refuses it for root and users alike. */
static void test_writable_is_writable_tmpfs_or_refused(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	s.writable = true;
	s.rootless = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv", "--writable-tmpfs",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	memset(&p, 0, sizeof(p));
	APP(&s)->app = sce41;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[4], "--writable-tmpfs");
	ctr_plan_free(&p);
	memset(&p, 0, sizeof(p));
	APP(&s)->app = sing342;
	s.bin = "singularity";
	for (int root = 0; root < 2; root++) {
		s.rootless = root == 0;
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
		assert_int_equal(e.code, EXIT_CTRUN);
		assert_non_null(strstr(e.msg, "--writable: singularity (Singularity 3.x) may ignore"));
		ctr_plan_free(&p);
		memset(&p, 0, sizeof(p));
	}
	spec_free(&s);
}

/* --root is --fakeroot (apptainer binds the home at /root itself),
 * --no-home its --no-home, once even with --gpu-isolation's own; under
 * isolation the home is bound back at /root with --root, not at all with
 * --no-home. */
static void test_root_and_no_home(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	s.as_root = true;
	s.no_home = true;
	add(&s, "/home/u/proj", "/home/u/proj", false);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv", "--fakeroot", "--no-home",
		"--bind", "/home/u/proj:/home/u/proj",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	assert_false(p.ident_nest);
	ctr_plan_free(&p);
	spec_free(&s);

	spec_init(&s, "apptainer", "apptainer");
	s.as_root = true;
	s.gpus = true;
	s.gpu_ids = "1";
	APP(&s)->gpu_isolate = true;
	snprintf(APP(&s)->home, sizeof(APP(&s)->home), "/home/u");
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(at(&p, "/home/u:/root") > 0);
	assert_true(strv_find(&p.argv, "/home/u:/home/u") < 0);
	ctr_plan_free(&p);
	spec_free(&s);

	spec_init(&s, "apptainer", "apptainer");
	s.no_home = true;
	s.gpus = true;
	s.gpu_ids = "1";
	APP(&s)->gpu_isolate = true;
	snprintf(APP(&s)->home, sizeof(APP(&s)->home), "/home/u");
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(strv_find(&p.argv, "/home/u:/home/u") < 0);
	{
		size_t n = 0;

		for (size_t i = 0; i < p.argv.n; i++)
			n += strcmp(p.argv.v[i], "--no-home") == 0;
		assert_int_equal(n, 1);
	}
	ctr_plan_free(&p);
	spec_free(&s);
}

/* Singularity 3 without setuid maps --fakeroot from /etc/subuid and
 * /etc/subgid (3.4.2's prepare_linux.go, newuidmap): without a range the
 * run would fail inside it; ctrun says so in one line, 125. */
static void test_fakeroot_on_singularity3_needs_subids(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "singularity", "singularity");
	APP(&s)->app = sing342;
	s.as_root = true;
	APP(&s)->subids = false;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "Singularity 3.4.2"));
	assert_non_null(strstr(e.msg, "/etc/subuid"));
	ctr_plan_free(&p);
	memset(&p, 0, sizeof(p));
	APP(&s)->subids = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(at(&p, "--fakeroot") > 0);
	ctr_plan_free(&p);
	spec_free(&s);
	/* apptainer 1.x has fakeroot without subids (a root-mapped namespace). */
	spec_init(&s, "apptainer", "apptainer");
	s.as_root = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	ctr_plan_free(&p);
	spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writable_is_writable_tmpfs_or_refused),
		cmocka_unit_test(test_root_and_no_home),
		cmocka_unit_test(test_fakeroot_on_singularity3_needs_subids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
