/* Unit tests of the CDI spec directories (devices/cdireg.c, cdipick.c):
 * the later directory wins, two specs of one directory defining a device
 * are refused naming both, an unknown name lists what there is, a spec
 * another user could write is not read, a symlink is not followed, and a
 * spec's own edits come with its first device only. */
#include <sys/stat.h>

#include "ctrtest.h"
#include "cdireg.h"

static void spec(struct tmpdir *td, const char *rel, const char *kind, const char *dev,
		 const char *env)
{
	FILE *f = fopen(tmpdir_path(td, rel), "w");

	assert_non_null(f);
	fprintf(f, "{\"cdiVersion\": \"0.5.0\", \"kind\": \"%s\", \"containerEdits\": {\"env\": "
		"[\"SPEC=%s\"]}, \"devices\": [{\"name\": \"%s\", \"containerEdits\": {\"env\": "
		"[\"%s\"]}}, {\"name\": \"other\", \"containerEdits\": {\"env\": [\"O=1\"]}}]}\n",
		kind, rel, dev, env);
	assert_int_equal(fclose(f), 0);
}

static struct strv dirs_of(struct tmpdir *td, const char *a, const char *b)
{
	struct strv d = { 0 };

	assert_int_equal(strv_push(&d, tmpdir_path(td, a)), 0);
	if (b != NULL)
		assert_int_equal(strv_push(&d, tmpdir_path(td, b)), 0);
	return d;
}

static const char *resolve(struct cdi_reg *r, const char *name, struct cdi_pick **p, size_t *n)
{
	static struct err e;
	struct strv names = { 0 };
	int rv;

	memset(&e, 0, sizeof(e));
	assert_int_equal(strv_push(&names, name), 0);
	rv = cdi_reg_resolve(r, &names, p, n, &e);
	strv_free(&names);
	return rv == 0 ? NULL : e.msg;
}

static void test_later_directory_wins(void **state)
{
	struct tmpdir *td = *state;
	struct strv d;
	struct cdi_reg r;
	struct cdi_pick *p;
	size_t n;
	struct err e = { 0 };

	mkdir(tmpdir_path(td, "etc"), 0755);
	mkdir(tmpdir_path(td, "run"), 0755);
	spec(td, "etc/a.json", "example.com/fake", "dev0", "FROM=etc");
	spec(td, "run/a.json", "example.com/fake", "dev0", "FROM=run");
	d = dirs_of(td, "etc", "run");
	if (cdi_reg_load(&d, &r, &e) < 0)
		fail_msg("%s", e.msg);
	assert_null(resolve(&r, "example.com/fake=dev0", &p, &n));
	assert_int_equal(n, 1);
	assert_true(p[0].with_spec);
	assert_string_equal(p[0].dev->edits.env.v[0], "FROM=run");
	assert_string_equal(p[0].qname, "example.com/fake=dev0");
	free(p);
	cdi_reg_free(&r);
	strv_free(&d);
}

static void test_two_specs_of_one_directory_refused(void **state)
{
	struct tmpdir *td = *state;
	struct strv d;
	struct cdi_reg r;
	struct cdi_pick *p;
	size_t n;
	struct err e = { 0 };
	const char *msg;

	mkdir(tmpdir_path(td, "etc"), 0755);
	spec(td, "etc/a.json", "example.com/fake", "dev0", "X=1");
	spec(td, "etc/b.json", "example.com/fake", "dev0", "X=2");
	d = dirs_of(td, "etc", NULL);
	assert_int_equal(cdi_reg_load(&d, &r, &e), 0);
	msg = resolve(&r, "example.com/fake=dev0", &p, &n);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "defined by two specs"));
	assert_non_null(strstr(msg, "a.json"));
	assert_non_null(strstr(msg, "b.json"));
	cdi_reg_free(&r);
	strv_free(&d);
}

static void test_unknown_device_lists_the_names(void **state)
{
	struct tmpdir *td = *state;
	struct strv d;
	struct cdi_reg r;
	struct cdi_pick *p;
	size_t n;
	struct err e = { 0 };
	const char *msg;

	mkdir(tmpdir_path(td, "etc"), 0755);
	spec(td, "etc/a.yaml", "example.com/fake", "dev0", "X=1");
	d = dirs_of(td, "etc", NULL);
	assert_int_equal(cdi_reg_load(&d, &r, &e), 0);
	msg = resolve(&r, "example.com/fake=dev9", &p, &n);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "unknown CDI device example.com/fake=dev9"));
	assert_non_null(strstr(msg, "example.com/fake=dev0, example.com/fake=other"));
	msg = resolve(&r, "other.org/x=1", &p, &n);
	assert_non_null(strstr(msg, "the specs define: example.com/fake=dev0"));
	/* Two devices of one spec: its own edits once. */
	{
		struct strv names = { 0 };

		strv_push(&names, "example.com/fake=dev0");
		strv_push(&names, "example.com/fake=other");
		strv_push(&names, "example.com/fake=dev0");
		assert_int_equal(cdi_reg_resolve(&r, &names, &p, &n, &e), 0);
		assert_int_equal(n, 2);
		assert_true(p[0].with_spec);
		assert_false(p[1].with_spec);
		free(p);
		strv_free(&names);
	}
	cdi_reg_free(&r);
	strv_free(&d);
}

static void test_untrusted_and_linked_specs_refused(void **state)
{
	struct tmpdir *td = *state;
	struct strv d;
	struct cdi_reg r;
	struct err e = { 0 };

	mkdir(tmpdir_path(td, "etc"), 0755);
	spec(td, "etc/a.json", "example.com/fake", "dev0", "X=1");
	assert_int_equal(chmod(tmpdir_path(td, "etc/a.json"), 0666), 0);
	d = dirs_of(td, "etc", NULL);
	assert_int_equal(cdi_reg_load(&d, &r, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "not trusted"));
	assert_int_equal(chmod(tmpdir_path(td, "etc/a.json"), 0644), 0);
	assert_int_equal(chmod(tmpdir_path(td, "etc"), 0777), 0);
	assert_int_equal(cdi_reg_load(&d, &r, &e), -1);
	assert_non_null(strstr(e.msg, "could be changed by another user"));
	assert_int_equal(chmod(tmpdir_path(td, "etc"), 0755), 0);
	assert_int_equal(symlink(tmpdir_path(td, "etc/a.json"), tmpdir_path(td, "etc/l.json")), 0);
	assert_int_equal(cdi_reg_load(&d, &r, &e), -1);
	assert_non_null(strstr(e.msg, "symbolic link"));
	assert_int_equal(unlink(tmpdir_path(td, "etc/l.json")), 0);
	assert_int_equal(cdi_reg_load(&d, &r, &e), 0);
	assert_int_equal(r.n, 1);
	cdi_reg_free(&r);
	strv_free(&d);
}

static void test_broken_spec_names_file_and_line(void **state)
{
	struct tmpdir *td = *state;
	struct strv d;
	struct cdi_reg r;
	struct err e = { 0 };
	FILE *f;

	mkdir(tmpdir_path(td, "etc"), 0755);
	f = fopen(tmpdir_path(td, "etc/z.yaml"), "w");
	fputs("cdiVersion: 0.5.0\nkind: a.com/b\ndevices: [\n", f);
	fclose(f);
	d = dirs_of(td, "etc", NULL);
	assert_int_equal(cdi_reg_load(&d, &r, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "etc/z.yaml:"));
	assert_non_null(strstr(e.msg, "does not parse as YAML"));
	strv_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_later_directory_wins, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_two_specs_of_one_directory_refused,
						tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_device_lists_the_names, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_and_linked_specs_refused,
						tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_broken_spec_names_file_and_line, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
