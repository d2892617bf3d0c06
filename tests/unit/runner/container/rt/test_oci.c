/* Golden tests of the OCI adapter: the exact runc argv, the overlay set-up,
 * and config.json parsed back with json-c: process, root, every mount in
 * order (paths with spaces, '$', quotes and newlines carried verbatim;
 * invalid UTF-8 refused), namespaces, devices, annotations and the hook. */
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

static struct ctr_device gpu[] = {
	{ "/dev/nvidia0", 'c', 195, 0, 0666 },
	{ "/dev/nvidiactl", 'c', 195, 255, 0666 },
};

/* The driver's own state (oci.h), one per test. */
static struct oci_own own;

static void spec_init(struct ctr_spec *s)
{
	struct err e = { 0 };

	memset(s, 0, sizeof(*s));
	memset(&own, 0, sizeof(own));
	s->own = &own;
	s->rt = ctr_driver_named("oci");
	s->bin = "/usr/sbin/runc";
	s->id = "ctrun-7.0.0-n1-42-0000abcd";
	s->image = "/images/pytorch.sqsh";
	s->kind = IMAGE_SQUASHFS;
	s->rootfs = "/tmp/ctrun-cache-1000/entries/squashfs-01";
	s->rundir = "/tmp/ctrun-1000/run1";
	s->cwd = "/home/u/my proj";
	s->uid = 1000;
	s->gid = 1000;
	s->rootless = true;
	s->agent = true;
	assert_int_equal(strv_push(&s->argv, "/.ctrun/agent"), 0);
	assert_int_equal(strv_push(&s->argv, "/.ctrun/spec"), 0);
	assert_int_equal(strv_push(&s->env, "LANG=C.UTF-8"), 0);
	assert_int_equal(mounts_add(&s->mounts, "/tmp", "/tmp", false, false, &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/etc/hosts", "/etc/hosts", true, true, &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/home/u/my proj", "/home/u/my proj", false, false,
				    &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/data/$x \"q\" 'r'\nnl", "/in side", true, false,
				    &e), 0);
}

static void spec_free(struct ctr_spec *s)
{
	strv_free(&s->argv);
	strv_free(&s->env);
	mounts_free(&s->mounts);
}

static json_object *get(json_object *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k != NULL; k = strtok_r(NULL, ".", &save)) {
		json_object *next = NULL;

		if (json_object_get_type(o) == json_type_array)
			next = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &next))
			next = NULL;
		if (next == NULL)
			fail_msg("config.json has no %s (at %s)", path, k);
		o = next;
	}
	return o;
}

static const char *str(json_object *c, const char *path)
{
	return json_object_get_string(get(c, path));
}

/* Annotation keys contain dots, which get() splits at. */
static const char *annotation(json_object *c, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(get(c, "annotations"), key, &v))
		fail_msg("no annotation %s", key);
	return json_object_get_string(v);
}

static json_object *plan_config(struct ctr_spec *s, struct ctr_plan *p)
{
	struct err e = { 0 };
	json_object *c;

	assert_int_equal(rt_oci_plan(s, p, &e), 0);
	assert_int_equal(p->nfiles, 1);
	assert_string_equal(p->files[0].path, "/tmp/ctrun-1000/run1/config.json");
	assert_int_equal(p->files[0].data[p->files[0].len - 1], '\n');
	c = json_tokener_parse(p->files[0].data);
	assert_non_null(c);
	return c;
}

static void assert_strings(json_object *arr, const char *const *want)
{
	size_t n = 0;

	while (want[n] != NULL)
		n++;
	assert_int_equal(json_object_array_length(arr), n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(json_object_get_string(json_object_array_get_idx(arr, i)), want[i]);
}

static void test_runc_argv_and_overlay(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;
	const char *argv[] = { "/usr/sbin/runc", "--root", "/tmp/ctrun-1000/run1/state", "run",
			       "--bundle", "/tmp/ctrun-1000/run1", "ctrun-7.0.0-n1-42-0000abcd", NULL };

	(void)state;
	spec_init(&s);
	c = plan_config(&s, &p);
	assert_int_equal(p.argv.n, 7);
	for (size_t i = 0; argv[i] != NULL; i++)
		assert_string_equal(p.argv.v[i], argv[i]);
	assert_true(p.ovl);
	assert_string_equal(p.ovl_lower, "/tmp/ctrun-cache-1000/entries/squashfs-01");
	assert_string_equal(p.ovl_tmp, "/tmp/ctrun-1000/run1/ovl");
	assert_string_equal(p.ovl_merged, "/tmp/ctrun-1000/run1/rootfs");
	assert_int_equal(p.setenv.n, 0);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* Under srun --mpi=pmi2 (rt.h pmi_fd): runc keeps descriptor 3, where the
 * runtime's child put the step's PMI2 socket, and closes the rest. */
static void test_pmi_socket_is_preserved(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;
	const char *argv[] = { "/usr/sbin/runc", "--root", "/tmp/ctrun-1000/run1/state", "run",
			       "--preserve-fds", "1", "--bundle", "/tmp/ctrun-1000/run1",
			       "ctrun-7.0.0-n1-42-0000abcd", NULL };

	(void)state;
	spec_init(&s);
	s.pmi_fd = 11;
	c = plan_config(&s, &p);
	assert_int_equal(p.argv.n, 9);
	for (size_t i = 0; argv[i] != NULL; i++)
		assert_string_equal(p.argv.v[i], argv[i]);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --entrypoint: runc runs process.args as given, so the agent runs the
 * command through the image's /etc/rc (Entrypoint and Cmd, written at
 * unpack as enroot's import writes it), else a SIF's runscript. */
static void test_entrypoint_goes_to_the_agent(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.entrypoint = true;
	assert_int_equal(rt_oci_plan(&s, &p, &e), 0);
	assert_int_equal(p.agent_entry.n, 2);
	assert_string_equal(p.agent_entry.v[0], "/etc/rc");
	assert_string_equal(p.agent_entry.v[1], "/.singularity.d/runscript");
	/* runc reads no /.singularity.d/env: the agent sources it (imageenv.h). */
	assert_true(p.agent_image_scripts);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_process_root_and_namespaces(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *ns, *hooks;

	(void)state;
	spec_init(&s);
	c = plan_config(&s, &p);
	assert_string_equal(str(c, "ociVersion"), "1.0.2");
	assert_false(json_object_get_boolean(get(c, "process.terminal")));
	/* Rootless: the caller is root of ctrun's user namespace. */
	assert_int_equal(json_object_get_int(get(c, "process.user.uid")), 0);
	assert_int_equal(json_object_get_int(get(c, "process.user.gid")), 0);
	assert_strings(get(c, "process.args"), (const char *const[]){ "/.ctrun/agent",
								       "/.ctrun/spec", NULL });
	assert_strings(get(c, "process.env"), (const char *const[]){
		"LANG=C.UTF-8", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		NULL });
	assert_string_equal(str(c, "process.cwd"), "/home/u/my proj");
	assert_true(json_object_get_boolean(get(c, "process.noNewPrivileges")));
	assert_string_equal(str(c, "root.path"), "rootfs");
	assert_true(json_object_get_boolean(get(c, "root.readonly")));
	ns = get(c, "linux.namespaces");
	assert_int_equal(json_object_array_length(ns), 2);
	assert_string_equal(str(ns, "0.type"), "pid");
	assert_string_equal(str(ns, "1.type"), "mount");
	/* No uid mappings: ctrun made the user namespace before runc. */
	assert_false(json_object_object_get_ex(get(c, "linux"), "uidMappings", NULL));
	assert_false(json_object_object_get_ex(c, "hooks", &hooks));
	assert_int_equal(json_object_array_length(get(c, "linux.devices")), 0);
	/* The agent then switches to the caller's uid and gid (spec record X). */
	assert_true(p.ident_nest);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* The mount at dst in config.json's list. */
static json_object *mount_at(json_object *c, const char *dst)
{
	json_object *ms = get(c, "mounts");

	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i), *d;

		if (json_object_object_get_ex(m, "destination", &d) &&
		    strcmp(json_object_get_string(d), dst) == 0)
			return m;
	}
	fail_msg("no mount at %s", dst);
	return NULL;
}

/* --unshare: the namespaces asked for, after pid and mount; with ipc a
 * /dev/shm of its own (the host's is bound otherwise). */
static void test_unshare_adds_namespaces_and_its_own_shm(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *ns;

	(void)state;
	spec_init(&s);
	c = plan_config(&s, &p);
	assert_string_equal(str(mount_at(c, "/dev/shm"), "type"), "bind");
	assert_string_equal(str(mount_at(c, "/dev/shm"), "source"), "/dev/shm");
	json_object_put(c);
	ctr_plan_free(&p);
	s.unshare = CTR_UNSHARE_NET | CTR_UNSHARE_IPC | CTR_UNSHARE_UTS;
	c = plan_config(&s, &p);
	ns = get(c, "linux.namespaces");
	assert_int_equal(json_object_array_length(ns), 5);
	assert_string_equal(str(ns, "0.type"), "pid");
	assert_string_equal(str(ns, "1.type"), "mount");
	assert_string_equal(str(ns, "2.type"), "network");
	assert_string_equal(str(ns, "3.type"), "ipc");
	assert_string_equal(str(ns, "4.type"), "uts");
	assert_string_equal(str(mount_at(c, "/dev/shm"), "type"), "tmpfs");
	assert_strings(get(mount_at(c, "/dev/shm"), "options"),
		       (const char *const[]){ "nosuid", "noexec", "nodev", "mode=1777", NULL });
	json_object_put(c);
	ctr_plan_free(&p);
	s.unshare = CTR_UNSHARE_UTS;
	s.host_pid = true; /* ctrun __hold */
	c = plan_config(&s, &p);
	ns = get(c, "linux.namespaces");
	assert_int_equal(json_object_array_length(ns), 2);
	assert_string_equal(str(ns, "0.type"), "mount");
	assert_string_equal(str(ns, "1.type"), "uts");
	assert_string_equal(str(mount_at(c, "/dev/shm"), "type"), "bind");
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* A shell has no agent: runc starts `/.ctrun/agent --as-user UID GID`,
 * which switches and execs the shell, its words after it as they are. */
static void test_shell_switches_to_the_caller_through_the_agent(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;

	(void)state;
	spec_init(&s);
	s.agent = false;
	s.uid = 1003;
	s.gid = 1005;
	strv_free(&s.argv);
	assert_int_equal(strv_push(&s.argv, "/bin/sh"), 0);
	assert_int_equal(strv_push(&s.argv, "-c"), 0);
	assert_int_equal(strv_push(&s.argv, "id -u; echo \"$HOME\""), 0);
	c = plan_config(&s, &p);
	assert_true(p.ident_nest);
	assert_strings(get(c, "process.args"), (const char *const[]){
		"/.ctrun/agent", "--as-user", "1003", "1005", "/bin/sh", "-c",
		"id -u; echo \"$HOME\"", NULL });
	/* runc itself still runs the process as root of ctrun's namespace. */
	assert_int_equal(json_object_get_int(get(c, "process.user.uid")), 0);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --root: today's behaviour, root of ctrun's namespace, no switch. */
static void test_root_stays_root_of_the_namespace(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;

	(void)state;
	spec_init(&s);
	s.as_root = true;
	s.agent = false;
	c = plan_config(&s, &p);
	assert_false(p.ident_nest);
	assert_strings(get(c, "process.args"), (const char *const[]){ "/.ctrun/agent",
								       "/.ctrun/spec", NULL });
	assert_int_equal(json_object_get_int(get(c, "process.user.uid")), 0);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --mount SRC:DST:suid,dev is the user asking: then the bind keeps them. */
static void test_suid_and_dev_only_when_asked(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *m;

	(void)state;
	spec_init(&s);
	s.mounts.v[s.mounts.n - 1].suid = true;
	s.mounts.v[s.mounts.n - 2].dev = true;
	s.mounts.v[s.mounts.n - 3].unbindable = true;
	c = plan_config(&s, &p);
	m = get(c, "mounts");
	assert_strings(get(m, "8.options"), (const char *const[]){ "rbind", "ro", "nodev", NULL });
	assert_strings(get(m, "7.options"), (const char *const[]){ "rbind", "nosuid", NULL });
	/* pyxis's unbindable: the runtime sets the propagation. */
	assert_strings(get(m, "6.options"), (const char *const[]){ "rbind", "ro", "nosuid",
		"nodev", "unbindable", NULL });
	json_object_put(c);
	ctr_plan_free(&p);
	/* crun 1.8 takes the option and leaves the bind as it was: refused. */
	{
		struct ctr_plan q = { 0 };
		struct err e = { 0 };

		assert_int_equal(ctr_driver_named("crun")->plan(&s, &q, &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, "crun does not make a bind unbindable"));
		ctr_plan_free(&q);
	}
	spec_free(&s);
}

/* tmpfs:DST:OPTS (pyxis's tmpfs:): a mount of type tmpfs, nosuid,nodev,
 * its checked options verbatim as the mount's data; runc and crun alike. */
static void test_tmpfs_is_a_tmpfs_mount(void **state)
{
	static const char *const drivers[] = { "oci", "crun", NULL };
	struct ctr_spec s;
	struct ctr_mount t;
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(mount_parse("tmpfs:/my tmpfs:ro,size=64m,huge=within_size", "/", &t, &e), 0);
	assert_int_equal(mounts_add_copy(&s.mounts, &t, &e), 0);
	mount_free(&t);
	for (const char *const *d = drivers; *d != NULL; d++) {
		struct ctr_plan p = { 0 };
		json_object *c, *m;

		s.rt = ctr_driver_named(*d);
		assert_int_equal(s.rt->plan(&s, &p, &e), 0);
		c = json_tokener_parse(p.files[0].data);
		assert_non_null(c);
		m = get(c, "mounts");
		assert_int_equal(json_object_array_length(m), 10);
		assert_string_equal(json_object_get_string(get(m, "9.destination")), "/my tmpfs");
		assert_string_equal(json_object_get_string(get(m, "9.type")), "tmpfs");
		assert_string_equal(json_object_get_string(get(m, "9.source")), "tmpfs");
		assert_strings(get(m, "9.options"), (const char *const[]){ "nosuid", "nodev", "ro",
			"size=64m", "huge=within_size", NULL });
		json_object_put(c);
		ctr_plan_free(&p);
	}
	spec_free(&s);
}

static void test_mounts_in_order_verbatim(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *m;
	static const char *const sys[][3] = { { "/proc", "proc", "proc" },
					      { "/dev", "tmpfs", "tmpfs" },
					      { "/dev/pts", "devpts", "devpts" },
					      { "/dev/shm", "bind", "/dev/shm" },
					      { "/sys", "bind", "/sys" } };

	(void)state;
	spec_init(&s);
	c = plan_config(&s, &p);
	m = get(c, "mounts");
	assert_int_equal(json_object_array_length(m), 5 + 4);
	for (size_t i = 0; i < 5; i++) {
		json_object *o = json_object_array_get_idx(m, i);

		assert_string_equal(str(o, "destination"), sys[i][0]);
		assert_string_equal(str(o, "type"), sys[i][1]);
		assert_string_equal(str(o, "source"), sys[i][2]);
	}
	/* Rootless devpts: no gid=5, which is not mapped. */
	assert_strings(get(m, "2.options"), (const char *const[]){ "nosuid", "noexec",
		"newinstance", "ptmxmode=0666", "mode=0620", NULL });
	assert_strings(get(m, "4.options"), (const char *const[]){ "rbind", "nosuid", "noexec",
		"nodev", "ro", NULL });
	/* Host binds are nosuid,nodev: a host tree others can write must not
	 * hand a root run a setuid file (issue: /tmp bound without nosuid). */
	assert_string_equal(str(m, "5.destination"), "/tmp");
	assert_strings(get(m, "5.options"), (const char *const[]){ "rbind", "nosuid", "nodev",
		NULL });
	assert_string_equal(str(m, "6.destination"), "/etc/hosts");
	assert_strings(get(m, "6.options"), (const char *const[]){ "rbind", "ro", "nosuid",
		"nodev", NULL });
	assert_string_equal(str(m, "7.source"), "/home/u/my proj");
	assert_string_equal(str(m, "8.source"), "/data/$x \"q\" 'r'\nnl");
	assert_string_equal(str(m, "8.destination"), "/in side");
	assert_string_equal(str(m, "8.type"), "bind");
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_root_keeps_its_ids_and_tty_gid(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;

	(void)state;
	spec_init(&s);
	s.rootless = false;
	s.uid = 0;
	s.gid = 0;
	s.tty = true;
	c = plan_config(&s, &p);
	assert_true(json_object_get_boolean(get(c, "process.terminal")));
	assert_strings(get(c, "mounts.2.options"), (const char *const[]){ "nosuid", "noexec",
		"newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL });
	/* Real root calling ctrun stays root: no switch. */
	assert_false(p.ident_nest);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* Without ctrun-hook: every GPU node of the node, as --nv does, let
 * through a device cgroup; no annotations. */
static void test_gpus_without_the_hook_pass_the_device_nodes(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *v;

	(void)state;
	spec_init(&s);
	s.gpus = true;
	s.gpu_ids = "0,1";
	own.devices = (struct ctr_devices){ gpu, 2 };
	c = plan_config(&s, &p);
	assert_string_equal(str(c, "linux.devices.1.path"), "/dev/nvidiactl");
	assert_string_equal(str(c, "linux.devices.1.type"), "c");
	assert_int_equal(json_object_get_int(get(c, "linux.devices.1.major")), 195);
	assert_int_equal(json_object_get_int(get(c, "linux.devices.1.minor")), 255);
	assert_int_equal(json_object_get_int(get(c, "linux.devices.0.fileMode")), 0666);
	assert_true(json_object_get_boolean(get(c, "linux.resources.devices.0.allow")));
	assert_string_equal(str(c, "linux.resources.devices.0.access"), "rwm");
	assert_false(json_object_object_get_ex(get(c, "annotations"), "org.ctrun.enabled", &v));
	assert_false(json_object_object_get_ex(c, "hooks", &v));
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* With ctrun-hook (gpu_pin.h): the hook at createContainer makes exactly
 * the container's GPU nodes; CUDA_VISIBLE_DEVICES is renumbered for it. */
static void test_gpus_with_the_hook(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c, *h, *env;
	bool cvd = false, nvd = false;

	(void)state;
	spec_init(&s);
	s.gpus = true;
	s.gpu_ids = "2,3";
	own.devices = (struct ctr_devices){ gpu, 2 };
	snprintf(own.hook, sizeof(own.hook), "/opt/ctrun/bin/ctrun-hook");
	c = plan_config(&s, &p);
	assert_string_equal(annotation(c, "org.ctrun.enabled"), "true");
	assert_string_equal(annotation(c, "org.ctrun.gpus"), "2,3");
	assert_int_equal(json_object_array_length(get(c, "linux.devices")), 0);
	h = get(c, "hooks.createContainer");
	assert_int_equal(json_object_array_length(h), 1);
	assert_string_equal(str(h, "0.path"), "/opt/ctrun/bin/ctrun-hook");
	assert_strings(get(h, "0.args"), (const char *const[]){ "ctrun-hook", "createContainer",
								 NULL });
	env = get(c, "process.env");
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		const char *kv = json_object_get_string(json_object_array_get_idx(env, i));

		cvd |= strcmp(kv, "CUDA_VISIBLE_DEVICES=0,1") == 0;
		nvd |= strcmp(kv, "NVIDIA_VISIBLE_DEVICES=2,3") == 0;
	}
	assert_true(cvd);
	assert_true(nvd);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_invalid_utf8_is_refused_naming_it(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(mounts_add(&s.mounts, "/data/latin1-\xe9t\xe9", "/d", false, false, &e), 0);
	assert_int_equal(rt_oci_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "UTF-8"));
	assert_non_null(strstr(e.msg, "/data/latin1-"));
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --writable: the root stays writable (the overlay's tmpfs takes the
 * writes); without it, read-only, as the test above checks. */
static void test_writable_leaves_the_root_writable(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	json_object *c;

	(void)state;
	spec_init(&s);
	s.writable = true;
	c = plan_config(&s, &p);
	assert_false(json_object_get_boolean(get(c, "root.readonly")));
	assert_true(p.ovl);
	json_object_put(c);
	ctr_plan_free(&p);
	spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runc_argv_and_overlay),
		cmocka_unit_test(test_pmi_socket_is_preserved),
		cmocka_unit_test(test_entrypoint_goes_to_the_agent),
		cmocka_unit_test(test_process_root_and_namespaces),
		cmocka_unit_test(test_unshare_adds_namespaces_and_its_own_shm),
		cmocka_unit_test(test_shell_switches_to_the_caller_through_the_agent),
		cmocka_unit_test(test_root_stays_root_of_the_namespace),
		cmocka_unit_test(test_mounts_in_order_verbatim),
		cmocka_unit_test(test_suid_and_dev_only_when_asked),
		cmocka_unit_test(test_tmpfs_is_a_tmpfs_mount),
		cmocka_unit_test(test_root_keeps_its_ids_and_tty_gid),
		cmocka_unit_test(test_gpus_without_the_hook_pass_the_device_nodes),
		cmocka_unit_test(test_gpus_with_the_hook),
		cmocka_unit_test(test_invalid_utf8_is_refused_naming_it),
		cmocka_unit_test(test_writable_leaves_the_root_writable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
