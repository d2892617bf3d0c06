/* Golden tests of the apptainer / singularity adapter: the exact argv of
 * `exec` (or `run` for the entrypoint), --bind for plain paths, --mount with
 * CSV quoting (Go's encoding/csv, which apptainer uses) for paths the --bind
 * syntax cannot hold, refusal of newlines, --nv and --pwd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt.h"

static void spec_init(struct ctr_spec *s, enum ctr_runtime rt, const char *bin)
{
	memset(s, 0, sizeof(*s));
	s->rt = rt;
	s->bin = bin;
	s->image = "/images/pytorch.sif";
	s->kind = IMAGE_SIF;
	s->cwd = "/home/u/proj";
	assert_int_equal(strv_push(&s->argv, "/.ctrun/agent"), 0);
	assert_int_equal(strv_push(&s->argv, "/.ctrun/spec"), 0);
}

static void add(struct ctr_spec *s, const char *src, const char *dst, bool ro)
{
	struct err e = { 0 };

	assert_int_equal(mounts_add(&s->mounts, src, dst, ro, false, &e), 0);
}

static void spec_free(struct ctr_spec *s)
{
	strv_free(&s->argv);
	mounts_free(&s->mounts);
}

static void assert_argv(const struct ctr_plan *p, const char *const *want)
{
	size_t n = 0;

	while (want[n] != NULL)
		n++;
	for (size_t i = 0; i < n && i < p->argv.n; i++)
		assert_string_equal(p->argv.v[i], want[i]);
	assert_int_equal(p->argv.n, n);
}

static void test_exec_with_plain_binds(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, RT_APPTAINER, "apptainer");
	add(&s, "/home/u/proj", "/home/u/proj", false);
	add(&s, "/scratch/data set", "/data", true);
	add(&s, "/tmp/ctrun-1000/run1", "/.ctrun", true);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv", "--pwd", "/home/u/proj",
		"--bind", "/home/u/proj:/home/u/proj",
		"--bind", "/scratch/data set:/data:ro",
		"--bind", "/tmp/ctrun-1000/run1:/.ctrun:ro",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	assert_int_equal(p.nfiles, 0);
	assert_int_equal(p.setenv.n, 0);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_singularity_nv_and_entrypoint(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, RT_SINGULARITY, "/usr/bin/singularity");
	s.gpus = true;
	s.entrypoint = true;
	s.cwd = NULL;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"/usr/bin/singularity", "run", "--cleanenv", "--nv",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	spec_free(&s);
}

/* ',' ':' '^' '\' belong to --bind's parser, surrounding blanks are trimmed
 * by it: such paths go as --mount, a CSV record of key=value fields. */
static void test_special_paths_go_as_csv_mounts(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, RT_APPTAINER, "apptainer");
	s.cwd = NULL;
	add(&s, "/data/a,b", "/in", false);
	add(&s, "/data/x:y", "/in:2", true);
	add(&s, "/data/say,\"hi\"", "/q", false);
	add(&s, "/data/caret^", "/back\\slash", false);
	add(&s, "/data/trail ", "/t", false);
	add(&s, "/data/$HOME 'q\"", "/d", false);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv",
		"--mount", "type=bind,\"source=/data/a,b\",destination=/in",
		"--mount", "type=bind,source=/data/x:y,destination=/in:2,ro",
		"--mount", "type=bind,\"source=/data/say,\"\"hi\"\"\",destination=/q",
		"--mount", "type=bind,source=/data/caret^,destination=/back\\slash",
		"--mount", "type=bind,source=/data/trail ,destination=/t",
		"--bind", "/data/$HOME 'q\":/d",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_newline_and_carriage_return_are_refused(void **state)
{
	/* The path and, in the one-line message, how it reads there. */
	const char *bad[] = { "/data/two\nlines", "/data/cr\r", NULL };
	const char *shown[] = { "/data/two\\nlines", "/data/cr\\x0d", NULL };

	(void)state;
	for (size_t i = 0; bad[i] != NULL; i++) {
		struct ctr_spec s;
		struct ctr_plan p = { 0 };
		struct err e = { 0 };

		spec_init(&s, RT_APPTAINER, "apptainer");
		add(&s, bad[i], "/data", false);
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, "apptainer"));
		assert_non_null(strstr(e.msg, shown[i]));
		assert_null(strpbrk(e.msg, "\n\r"));
		ctr_plan_free(&p);
		spec_free(&s);
	}
}

static bool fake_have(const char *bin, char *path, size_t size)
{
	/* A node with apptainer and runc, but no enroot, singularity or crun. */
	if (strcmp(bin, "apptainer") != 0 && strcmp(bin, "runc") != 0)
		return false;
	snprintf(path, size, "/usr/bin/%s", bin);
	return true;
}

static bool have_nothing(const char *bin, char *path, size_t size)
{
	(void)bin;
	(void)path;
	(void)size;
	return false;
}

static void test_auto_picks_an_installed_runtime_that_fits(void **state)
{
	enum ctr_runtime rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_pick_runtime("auto", IMAGE_SQUASHFS, "/i.sqsh", fake_have, &rt, bin,
					  sizeof(bin), &e), 0);
	assert_int_equal(rt, RT_APPTAINER); /* enroot is not installed */
	assert_string_equal(bin, "/usr/bin/apptainer");
	assert_int_equal(ctr_pick_runtime("auto", IMAGE_DOCKER_ARCHIVE, "/i.tar", fake_have, &rt,
					  bin, sizeof(bin), &e), 0);
	assert_int_equal(rt, RT_OCI);
	assert_string_equal(bin, "/usr/bin/runc");
	assert_int_equal(ctr_pick_runtime("auto", IMAGE_DIR, "/i", fake_have, &rt, bin,
					  sizeof(bin), &e), 0);
	assert_int_equal(rt, RT_OCI);
}

static void test_none_installed_names_what_was_looked_for(void **state)
{
	enum ctr_runtime rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_pick_runtime("auto", IMAGE_SIF, "/i.sif", have_nothing, &rt, bin,
					  sizeof(bin), &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "no container runtime for /i.sif (sif): looked for apptainer, "
			    "singularity, runc and crun in PATH; install one of them or add its "
			    "directory to PATH");
}

static void test_explicit_runtime_must_fit_and_be_installed(void **state)
{
	enum ctr_runtime rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_pick_runtime("enroot", IMAGE_SIF, "/i.sif", fake_have, &rt, bin,
					  sizeof(bin), &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "cannot run /i.sif (sif): use --runtime apptainer or "
				      "singularity or oci"));
	assert_int_equal(ctr_pick_runtime("enroot", IMAGE_SQUASHFS, "/i.sqsh", fake_have, &rt, bin,
					  sizeof(bin), &e), -1);
	assert_non_null(strstr(e.msg, "enroot not found"));
	assert_int_equal(ctr_pick_runtime("apptainer", IMAGE_OCI_ARCHIVE, "/i.tar", fake_have, &rt,
					  bin, sizeof(bin), &e), -1);
	assert_non_null(strstr(e.msg, "use --runtime oci"));
	assert_int_equal(ctr_pick_runtime("oci", IMAGE_SIF, "/i.sif", fake_have, &rt, bin,
					  sizeof(bin), &e), 0);
	assert_int_equal(rt, RT_OCI);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_with_plain_binds),
		cmocka_unit_test(test_singularity_nv_and_entrypoint),
		cmocka_unit_test(test_special_paths_go_as_csv_mounts),
		cmocka_unit_test(test_newline_and_carriage_return_are_refused),
		cmocka_unit_test(test_auto_picks_an_installed_runtime_that_fits),
		cmocka_unit_test(test_none_installed_names_what_was_looked_for),
		cmocka_unit_test(test_explicit_runtime_must_fit_and_be_installed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
