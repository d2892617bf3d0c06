/* Unit tests of a container's edits from the host (rt/edits.h): what each
 * runtime refuses, in one line naming the edit and who asked
 * (ctr_edits_check), the binds a bind runtime gets (ctr_edits_binds), and
 * the OCI config.json of a root and of a rootless run (ociedits.c): nodes
 * made with their device-cgroup access or bound, mounts with their
 * options, hooks at their stages, additional groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "drivers.h"
#include "oci/oci.h"

static struct oci_own own;

/* One device's edits: a node (the host's /dev/null, or one to make), a
 * bind, a tmpfs, a createContainer hook, a group. */
static void edits(struct ctr_edits *d, bool host_node)
{
	static struct ctr_edit_node n;
	static struct ctr_edit_mount m[2];
	static struct ctr_edit_hook h;
	static gid_t g = 44;

	memset(d, 0, sizeof(*d));
	n = (struct ctr_edit_node){ .path = "/dev/fake0", .host = "/dev/null", .type = 'c',
				    .major = host_node ? 1 : 240, .minor = 3, .mode = 0600,
				    .mode_asked = !host_node, .access = "rw", .host_same = host_node,
				    .host_mode = 0666 };
	m[0] = (struct ctr_edit_mount){ .src = "/etc", .dst = "/opt/lib", .type = "bind",
					.bind = true };
	m[1] = (struct ctr_edit_mount){ .src = "tmpfs", .dst = "/scratch", .type = "tmpfs" };
	assert_int_equal(strv_push(&m[0].opts, "ro"), 0);
	assert_int_equal(strv_push(&m[0].opts, "bind"), 0);
	assert_int_equal(strv_push(&m[1].opts, "size=1m"), 0);
	h = (struct ctr_edit_hook){ .stage = CTR_HOOK_CREATE_CONTAINER, .path = "/bin/true",
				    .timeout = 5 };
	assert_int_equal(strv_push(&h.args, "true"), 0);
	d->nodes = &n;
	d->nnodes = 1;
	d->mounts = m;
	d->nmounts = 2;
	d->hooks = &h;
	d->nhooks = 1;
	d->gids = &g;
	d->ngids = 1;
	assert_int_equal(strv_push(&d->from, "example.com/fake=dev0"), 0);
}

static void edits_free(struct ctr_edits *d)
{
	strv_free(&d->mounts[0].opts);
	strv_free(&d->mounts[1].opts);
	strv_free(&d->hooks[0].args);
	strv_free(&d->from);
}

static const char *refused(const char *runtime, bool rootless, bool host_node)
{
	static struct err e;
	struct ctr_spec s = { .rt = ctr_driver_named(runtime), .rootless = rootless };

	memset(&e, 0, sizeof(e));
	edits(&s.edits, host_node);
	if (ctr_edits_check(&s, &e) == 0) {
		edits_free(&s.edits);
		return NULL;
	}
	assert_int_equal(e.code, EXIT_USAGE);
	assert_null(strchr(e.msg, '\n'));
	assert_non_null(strstr(e.msg, "example.com/fake=dev0"));
	edits_free(&s.edits);
	return e.msg;
}

static void test_what_each_runtime_refuses(void **state)
{
	(void)state;
	assert_null(refused("oci", false, false));
	assert_null(refused("crun", false, true));
	/* Rootless: no mknod, no groups. */
	assert_non_null(strstr(refused("oci", true, false), "the host has no such node"));
	assert_non_null(strstr(refused("oci", true, true), "additional group 44"));
	assert_non_null(strstr(refused("charliecloud", false, true), "shares the host's /dev"));
	assert_non_null(strstr(refused("enroot", false, true), "access 'rw' only"));
	assert_non_null(strstr(refused("enroot", false, false), "the host has no such node"));
	assert_non_null(strstr(refused("apptainer", false, false), "cannot make one"));
}

static void test_bind_runtimes_refuse_a_tmpfs_and_hooks(void **state)
{
	struct ctr_spec s = { .rt = ctr_driver_named("charliecloud"), .rootless = true };
	struct err e = { 0 };

	(void)state;
	edits(&s.edits, true);
	strcpy(s.edits.nodes[0].access, "rwm");
	s.edits.nodes[0].path = "/opt/fake0"; /* not under the host's /dev */
	assert_int_equal(ctr_edits_check(&s, &e), -1);
	assert_non_null(strstr(e.msg, "mount of /scratch (type tmpfs) of example.com/fake=dev0: "
				      "charliecloud mounts only binds"));
	s.edits.nmounts = 1;
	assert_int_equal(ctr_edits_check(&s, &e), -1);
	assert_non_null(strstr(e.msg, "createContainer hook /bin/true of example.com/fake=dev0: "
				      "charliecloud runs no OCI hooks"));
	/* enroot mounts the tmpfs (its fstab), refuses the hook. */
	s.rt = ctr_driver_named("enroot");
	s.edits.nmounts = 2;
	assert_int_equal(ctr_edits_check(&s, &e), -1);
	assert_non_null(strstr(e.msg, "enroot runs no OCI hooks"));
	edits_free(&s.edits);
}

static void test_binds_of_a_bind_runtime(void **state)
{
	struct ctr_edits d;
	struct ctr_mounts ms = { 0 };
	struct err e = { 0 };

	(void)state;
	edits(&d, true);
	assert_int_equal(ctr_edits_binds(&d, true, &ms, &e), 0);
	assert_int_equal(ms.n, 2); /* the node and the bind; the tmpfs is not a bind */
	assert_string_equal(ms.v[0].src, "/dev/null");
	assert_string_equal(ms.v[0].dst, "/dev/fake0");
	assert_true(ms.v[0].dev);
	assert_true(ms.v[0].file);
	assert_string_equal(ms.v[1].dst, "/opt/lib");
	assert_true(ms.v[1].ro);
	mounts_free(&ms);
	edits_free(&d);
}

static json_object *config(bool rootless)
{
	struct ctr_spec s = { .rt = ctr_driver_named("oci"), .bin = "runc", .id = "c",
			      .rootfs = "/r", .rundir = "/run/x", .rootless = rootless,
			      .uid = rootless ? 1000 : 0, .own = &own };
	struct ctr_plan p = { 0 };
	struct err e = { 0 };
	json_object *c;

	memset(&own, 0, sizeof(own));
	edits(&s.edits, true);
	assert_int_equal(strv_push(&s.argv, "true"), 0);
	if (rt_oci_plan(&s, &p, &e) < 0)
		fail_msg("%s", e.msg);
	c = json_tokener_parse(p.files[0].data);
	assert_non_null(c);
	ctr_plan_free(&p);
	strv_free(&s.argv);
	edits_free(&s.edits);
	return c;
}

static json_object *at(json_object *o, const char *k)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("no %s", k);
	return v;
}

static json_object *last(json_object *arr)
{
	return json_object_array_get_idx(arr, json_object_array_length(arr) - 1);
}

static void test_oci_root_config(void **state)
{
	json_object *c = config(false), *lx = at(c, "linux"), *d, *r, *m, *h;

	(void)state;
	d = json_object_array_get_idx(at(lx, "devices"), 0);
	assert_string_equal(json_object_get_string(at(d, "path")), "/dev/fake0");
	assert_int_equal(json_object_get_int(at(d, "major")), 1);
	/* No fileMode asked: the host node's. */
	assert_int_equal(json_object_get_int(at(d, "fileMode")), 0666);
	r = last(at(at(lx, "resources"), "devices"));
	assert_string_equal(json_object_get_string(at(r, "access")), "rw");
	/* From "deny all" (crun applies only the rules it gets). */
	r = json_object_array_get_idx(at(at(lx, "resources"), "devices"), 0);
	assert_false(json_object_get_boolean(at(r, "allow")));
	assert_string_equal(json_object_get_string(at(r, "access")), "rwm");
	m = last(at(c, "mounts"));
	assert_string_equal(json_object_get_string(at(m, "type")), "tmpfs");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(at(m, "options"), 0)),
			    "size=1m");
	h = json_object_array_get_idx(at(at(c, "hooks"), "createContainer"), 0);
	assert_string_equal(json_object_get_string(at(h, "path")), "/bin/true");
	assert_int_equal(json_object_get_int(at(h, "timeout")), 5);
	assert_int_equal(json_object_get_int(json_object_array_get_idx(
				 at(at(at(c, "process"), "user"), "additionalGids"), 0)), 44);
	json_object_put(c);
}

static void test_oci_rootless_binds_the_node(void **state)
{
	json_object *c = config(true), *ms = at(c, "mounts"), *b = NULL;

	(void)state;
	assert_int_equal(json_object_array_length(at(at(c, "linux"), "devices")), 0);
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		if (strcmp(json_object_get_string(at(m, "destination")), "/dev/fake0") == 0)
			b = m;
	}
	assert_non_null(b);
	assert_string_equal(json_object_get_string(at(b, "source")), "/dev/null");
	assert_string_equal(json_object_get_string(at(b, "type")), "bind");
	json_object_put(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_what_each_runtime_refuses),
		cmocka_unit_test(test_bind_runtimes_refuse_a_tmpfs_and_hooks),
		cmocka_unit_test(test_binds_of_a_bind_runtime),
		cmocka_unit_test(test_oci_root_config),
		cmocka_unit_test(test_oci_rootless_binds_the_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
