/* Unit tests of CDI device names and spec files (devices/cdiname.c,
 * cdispec.c, cdiyaml.c): the CDI project's parser rules, JSON and YAML
 * giving the same struct, the library's validation (unknown fields, a
 * field newer than the cdiVersion, a device without edits), and the file
 * and line of a spec that does not parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cdispec.h"

static const char *name_bad(const char *s)
{
	static struct err e;
	struct cdi_name n;

	memset(&e, 0, sizeof(e));
	assert_int_equal(cdi_name_parse(s, &n, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	return e.msg;
}

static void test_qualified_names(void **state)
{
	struct cdi_name n;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(cdi_name_parse("nvidia.com/gpu=0", &n, &e), 0);
	assert_string_equal(n.vendor, "nvidia.com");
	assert_string_equal(n.class, "gpu");
	assert_string_equal(n.name, "0");
	assert_int_equal(cdi_name_parse("vendor.com/foo-bar123.B_az=all", &n, &e), 0);
	assert_string_equal(n.class, "foo-bar123.B_az");
	/* MIG devices: digits, ':' between. */
	assert_int_equal(cdi_name_parse("nvidia.com/gpu=0:1", &n, &e), 0);
	assert_string_equal(n.name, "0:1");
	assert_int_equal(cdi_name_parse("nvidia.com/gpu=GPU-6f5c2d1e-aa", &n, &e), 0);
}

static void test_names_refused_with_the_form(void **state)
{
	(void)state;
	assert_non_null(strstr(name_bad("/dev/nvidia0"), "vendor.com/class=name"));
	assert_non_null(strstr(name_bad("nvidia.com=gpu"), "vendor.com/class=name"));
	assert_non_null(strstr(name_bad("gpu=0"), "vendor.com/class=name"));
	assert_non_null(strstr(name_bad("nvidia.com/gpu="), "vendor.com/class=name"));
	assert_non_null(strstr(name_bad("nvidia.com/gpu/x=0"), "class"));
	assert_non_null(strstr(name_bad("1vendor/gpu=0"), "start with a letter"));
	assert_non_null(strstr(name_bad("vendor.com/gpu=:0"), "start with a letter or a digit"));
	assert_non_null(strstr(name_bad("vendor.com/gpu=a="), "name"));
	assert_non_null(strstr(name_bad("vendor.com/gpu-=0"), "end with"));
}

static const char json_spec[] =
	"{\"cdiVersion\": \"0.5.0\", \"kind\": \"example.com/fake\",\n"
	" \"containerEdits\": {\"env\": [\"A=1\"]},\n"
	" \"devices\": [{\"name\": \"dev0\", \"containerEdits\": {\n"
	"   \"env\": [\"B=2\"],\n"
	"   \"deviceNodes\": [{\"path\": \"/dev/fake0\", \"hostPath\": \"/dev/null\",\n"
	"                    \"type\": \"c\", \"major\": 1, \"minor\": 3, \"fileMode\": 420,\n"
	"                    \"permissions\": \"rw\", \"uid\": 7, \"gid\": 8}],\n"
	"   \"mounts\": [{\"hostPath\": \"/opt\", \"containerPath\": \"/x\", \"type\": \"bind\",\n"
	"               \"options\": [\"ro\", \"bind\"]}],\n"
	"   \"hooks\": [{\"hookName\": \"createContainer\", \"path\": \"/bin/true\",\n"
	"              \"args\": [\"true\", \"x\"], \"env\": [\"H=1\"], \"timeout\": 5}]}}]}\n";

static const char yaml_spec[] =
	"---\n"
	"cdiVersion: 0.5.0\n"
	"kind: example.com/fake\n"
	"containerEdits:\n"
	"  env: [A=1]\n"
	"devices:\n"
	"- name: dev0\n"
	"  containerEdits:\n"
	"    env:\n"
	"    - B=2\n"
	"    deviceNodes:\n"
	"    - {path: /dev/fake0, hostPath: /dev/null, type: c, major: 1, minor: 3,\n"
	"       fileMode: 0644, permissions: rw, uid: 7, gid: 8}\n"
	"    mounts:\n"
	"    - hostPath: /opt\n"
	"      containerPath: /x\n"
	"      type: bind\n"
	"      options: [ro, bind]\n"
	"    hooks:\n"
	"    - hookName: createContainer\n"
	"      path: /bin/true\n"
	"      args: [\"true\", x]\n"
	"      env: [H=1]\n"
	"      timeout: 5\n";

static void check_parsed(const struct cdi_spec *s)
{
	const struct cdi_edits *d = &s->devs[0].edits;

	assert_string_equal(s->version, "0.5.0");
	assert_string_equal(s->vendor, "example.com");
	assert_string_equal(s->class, "fake");
	assert_int_equal(s->edits.env.n, 1);
	assert_string_equal(s->edits.env.v[0], "A=1");
	assert_int_equal(s->ndevs, 1);
	assert_string_equal(s->devs[0].name, "dev0");
	assert_int_equal(d->nnodes, 1);
	assert_string_equal(d->nodes[0].path, "/dev/fake0");
	assert_string_equal(d->nodes[0].host_path, "/dev/null");
	assert_int_equal(d->nodes[0].type, 'c');
	assert_int_equal(d->nodes[0].major, 1);
	assert_int_equal(d->nodes[0].minor, 3);
	assert_true(d->nodes[0].has_mode);
	assert_int_equal(d->nodes[0].mode, 0644);
	assert_string_equal(d->nodes[0].perms, "rw");
	assert_int_equal(d->nodes[0].uid, 7);
	assert_int_equal(d->nodes[0].gid, 8);
	assert_int_equal(d->nmounts, 1);
	assert_string_equal(d->mounts[0].type, "bind");
	assert_int_equal(d->mounts[0].options.n, 2);
	assert_int_equal(d->nhooks, 1);
	assert_int_equal(d->hooks[0].stage, CDI_CREATE_CONTAINER);
	assert_string_equal(d->hooks[0].args.v[1], "x");
	assert_int_equal(d->hooks[0].timeout, 5);
}

static void test_json_and_yaml_give_the_same_spec(void **state)
{
	struct cdi_spec s;
	struct err e = { 0 };

	(void)state;
	if (cdi_spec_parse(json_spec, strlen(json_spec), false, "x.json", &s, &e) < 0)
		fail_msg("%s", e.msg);
	check_parsed(&s);
	cdi_spec_free(&s);
	if (cdi_spec_parse(yaml_spec, strlen(yaml_spec), true, "x.yaml", &s, &e) < 0)
		fail_msg("%s", e.msg);
	check_parsed(&s);
	cdi_spec_free(&s);
}

static const char *spec_bad(const char *text, bool yaml)
{
	static struct err e;
	struct cdi_spec s;

	memset(&e, 0, sizeof(e));
	assert_int_equal(cdi_spec_parse(text, strlen(text), yaml, "/etc/cdi/v.x", &s, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "/etc/cdi/v.x"));
	return e.msg;
}

#define DEV "\"devices\": [{\"name\": \"d\", \"containerEdits\": {\"env\": [\"A=1\"]}}]"

static void test_syntax_errors_name_the_line(void **state)
{
	(void)state;
	assert_non_null(strstr(spec_bad("{\n\"cdiVersion\": \"0.5.0\",\n\"kind\" \"x\"}", false),
			       "/etc/cdi/v.x:3: does not parse as JSON"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: [a\ndevices: x\n", true),
			       "does not parse as YAML"));
	assert_non_null(strstr(spec_bad("{\"kind\": \"a/b\"} trailing", false), "does not parse as JSON"));
	assert_non_null(strstr(spec_bad("a: &x 1\nb: *x\n", true), "aliases"));
	assert_non_null(strstr(spec_bad("a: 1\na: 2\n", true), "twice"));
	assert_non_null(strstr(spec_bad("--- {}\n--- {}\n", true), "more than one"));
}

static void test_the_library_rules(void **state)
{
	(void)state;
	/* An unknown field, as the library's strict unmarshalling. */
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"0.5.0\", \"kind\": \"a.com/b\", "
					"\"extra\": 1, " DEV "}", false), "unknown field 'extra'"));
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"9.9.9\", \"kind\": \"a.com/b\", " DEV
					"}", false), "not a CDI version"));
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"0.5.0\", \"kind\": \"ab\", " DEV "}",
					false), "vendor.com/class"));
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"0.5.0\", \"kind\": \"a.com/b\", "
					"\"devices\": []}", false), "no devices"));
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"0.5.0\", \"kind\": \"a.com/b\", "
					"\"devices\": [{\"name\": \"d\"}]}", false),
			       "no containerEdits"));
	/* additionalGids came with 0.7.0. */
	assert_non_null(strstr(spec_bad("{\"cdiVersion\": \"0.6.0\", \"kind\": \"a.com/b\", "
					"\"devices\": [{\"name\": \"d\", \"containerEdits\": "
					"{\"additionalGids\": [5]}}]}", false),
			       "needs cdiVersion 0.7.0"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: d\n"
					"  containerEdits:\n    hooks:\n    - {hookName: bogus, "
					"path: /x}\n", true), "not an OCI hook stage"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: d\n"
					"  containerEdits:\n    hooks:\n    - {hookName: prestart, "
					"path: bin/x}\n", true), "not absolute"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: d\n"
					"  containerEdits:\n    deviceNodes:\n    - {path: /dev/x, "
					"permissions: rwx}\n", true), "permissions"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: d\n"
					"  containerEdits:\n    env: [NOEQUALS]\n", true),
			       "NAME=VALUE"));
	assert_non_null(strstr(spec_bad("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: d\n"
					"  containerEdits: {env: [A=1]}\n- name: d\n"
					"  containerEdits: {env: [A=1]}\n", true), "defined twice"));
}

static void test_every_listed_version_is_taken(void **state)
{
	(void)state;
	for (size_t i = 0; cdi_versions[i] != NULL; i++) {
		char text[256];
		struct cdi_spec s;
		struct err e = { 0 };

		snprintf(text, sizeof(text), "{\"cdiVersion\": \"v%s\", \"kind\": \"a.com/b\", " DEV
			 "}", cdi_versions[i]);
		if (cdi_spec_parse(text, strlen(text), false, "v.json", &s, &e) < 0)
			fail_msg("%s: %s", cdi_versions[i], e.msg);
		cdi_spec_free(&s);
	}
	assert_string_equal(cdi_versions[9], "1.1.0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qualified_names),
		cmocka_unit_test(test_names_refused_with_the_form),
		cmocka_unit_test(test_json_and_yaml_give_the_same_spec),
		cmocka_unit_test(test_syntax_errors_name_the_line),
		cmocka_unit_test(test_the_library_rules),
		cmocka_unit_test(test_every_listed_version_is_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
