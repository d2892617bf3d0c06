/* Golden tests of the apptainer / singularity adapter.  The expected argv
 * follows the real parsers' rules, cited where each case uses them:
 *   [A-bind]  apptainer pkg/runtime/engine/apptainer/config/bind.go
 *             ParseBindPath: pieces of the regexp `([^,^:]+:?)`, each
 *             strings.TrimSpace'd; '\' escapes; newBindPath splits on ':'.
 *   [A-mount] same folder, mount.go ParseMountString: encoding/csv, one
 *             record of key=value fields (type, source, destination, ro).
 *   [A-order] internal/pkg/runtime/launch/launcher_linux.go setBinds:
 *             every --bind (ParseBindPath) first, then every --mount.
 *   [A-env]   internal/pkg/util/env/create.go SetContainerEnv: --cleanenv
 *             sets LANG=C; process_linux.go injectEnvHandler appends
 *             /.singularity.d/libs only to an LD_LIBRARY_PATH the image set.
 *   [S-bind]  SingularityCE and Singularity 3.4.2 (cmd/internal/cli/
 *             action_flags.go, actionBindFlag): --bind is a pflag string
 *             slice, its value read by encoding/csv: a bare '"' is an error.
 *   [S-oci]   SingularityCE 4.x: `oci mode = yes` in singularity.conf runs
 *             its OCI launcher unless --no-oci. */
#define CTRTEST_APPTAINER
#include "ctrtest.h"

/* A run of workers: `exec` of the agent, which enters the working
 * directory itself (no --pwd: apptainer's fails where runc creates it). */
static void test_exec_with_plain_binds(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	add(&s, "/home/u/proj", "/home/u/proj", false);
	add(&s, "/scratch/data set", "/data", true);
	add(&s, "/tmp/ctrun-1000/run1", "/.ctrun", true);
	add(&s, "/opt/ctrun/ctrun-agent", "/.ctrun/agent", true);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv",
		"--bind", "/home/u/proj:/home/u/proj",
		"--bind", "/scratch/data set:/data:ro",
		"--bind", "/tmp/ctrun-1000/run1:/.ctrun:ro",
		"--bind", "/opt/ctrun/ctrun-agent:/.ctrun/agent:ro",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	assert_int_equal(p.nfiles, 0);
	assert_int_equal(p.setenv.n, 0);
	assert_true(p.agent_complete_env);
	/* apptainer sourced /.singularity.d/env itself: never twice. */
	assert_false(p.agent_image_scripts);
	assert_int_equal(p.agent_entry.n, 0);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* A shell has no agent: apptainer enters the directory (--pwd). */
static void test_shell_gets_pwd(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	s.agent = false;
	strv_free(&s.argv);
	strv_push(&s.argv, "/bin/sh");
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv", "--pwd", "/home/u/proj",
		"/images/pytorch.sif", "/bin/sh", NULL });
	ctr_plan_free(&p);
	spec_free(&s);
}

/* No command: the image's default is the agent's (its exec mode, the
 * workers' environment), never `run` (Singularity 3 has no run driver for
 * an image it did not build) nor a script of apptainer's: exec IMAGE, the
 * agent, and the runscript then /etc/rc as its candidates. */
static void test_image_default_without_run(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "singularity", "singularity");
	APP(&s)->app = sing342;
	s.entrypoint = true;
	s.run_default = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[1], "exec");
	assert_string_equal(p.argv.v[p.argv.n - 2], "/.ctrun/agent");
	assert_string_equal(p.argv.v[p.argv.n - 1], "/.ctrun/spec");
	assert_true(strv_find(&p.argv, "run") < 0);
	assert_true(strv_find(&p.argv, "-c") < 0);
	assert_int_equal(p.agent_entry.n, 2);
	assert_string_equal(p.agent_entry.v[0], "/.singularity.d/runscript");
	assert_string_equal(p.agent_entry.v[1], "/etc/rc");
	assert_true(p.agent_complete_env);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --entrypoint is never `run` (its fallback is `/bin/sh /.ctrun/agent`):
 * the agent runs the workers through the runscript, else enroot's /etc/rc.
 * --nv: the agent adds /.singularity.d/libs to LD_LIBRARY_PATH [A-env].
 * SingularityCE 4 gets --no-oci [S-oci]. */
static void test_singularityce_nv_and_entrypoint(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "singularity", "/usr/bin/singularity");
	APP(&s)->app = sce41;
	s.gpus = true;
	s.slurm = true;
	s.entrypoint = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"/usr/bin/singularity", "exec", "--no-oci", "--cleanenv", "--nv",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	assert_int_equal(p.agent_entry.n, 2);
	assert_string_equal(p.agent_entry.v[0], "/.singularity.d/runscript");
	assert_string_equal(p.agent_entry.v[1], "/etc/rc");
	assert_int_equal(p.agent_libdirs.n, 1);
	assert_string_equal(p.agent_libdirs.v[0], "/.singularity.d/libs");
	assert_int_equal(p.agent_env.n, 0); /* Slurm's CUDA_VISIBLE_DEVICES stands */
	assert_false(p.gpus_renumbered);
	ctr_plan_free(&p);
	spec_free(&s);
	/* apptainer has no --no-oci (an unknown flag is an error); ctrun -q
	 * silences its notes with the global --silent (errors only). */
	spec_init(&s, "apptainer", "apptainer");
	s.quiet = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(strv_find(&p.argv, "--no-oci") < 0);
	assert_string_equal(p.argv.v[1], "--silent");
	assert_string_equal(p.argv.v[2], "exec");
	ctr_plan_free(&p);
	spec_free(&s);
}

/* ',' ':' '^' '\' split or escape a --bind [A-bind], '"' breaks SingularityCE's
 * CSV [S-bind]: one such path sends every bind as --mount, a CSV record
 * [A-mount], in ctrun's order, since --binds would all come first [A-order]. */
static void test_special_paths_send_every_bind_as_mount(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	add(&s, "/data/a,b", "/in", false);
	add(&s, "/data/x:y", "/in:2", true);
	add(&s, "/data/say,\"hi\"", "/q", false);
	add(&s, "/data/caret^", "/back\\slash", false);
	add(&s, "/data/$HOME 'q", "/d", false);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv",
		"--mount", "type=bind,\"source=/data/a,b\",destination=/in",
		"--mount", "type=bind,source=/data/x:y,destination=/in:2,ro",
		"--mount", "type=bind,\"source=/data/say,\"\"hi\"\"\",destination=/q",
		"--mount", "type=bind,source=/data/caret^,destination=/back\\slash",
		"--mount", "type=bind,source=/data/$HOME 'q,destination=/d",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	spec_free(&s);

	/* A '"' alone: fine for apptainer's string array, an error in
	 * SingularityCE's CSV, so --mount everywhere [S-bind]. */
	spec_init(&s, "singularity", "singularity");
	APP(&s)->app = sce41;
	add(&s, "/data/say\"hi", "/q", false);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"singularity", "exec", "--no-oci", "--cleanenv",
		"--mount", "type=bind,\"source=/data/say\"\"hi\",destination=/q",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	spec_free(&s);
}

/* The run directory under a TMPDIR with ',' needs --mount; the agent inside
 * it must still come after it, or it would be hidden under the directory
 * [A-order].  The same for a user's mount under another. */
static void test_order_is_kept(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	add(&s, "/x/a,b", "/data", false);
	add(&s, "/m", "/data/sub", false);
	add(&s, "/tmp/a,b/ctrun-1000/run1", "/.ctrun", true);
	add(&s, "/opt/ctrun/ctrun-agent", "/.ctrun/agent", true);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_argv(&p, (const char *const[]){
		"apptainer", "exec", "--cleanenv",
		"--mount", "type=bind,\"source=/x/a,b\",destination=/data",
		"--mount", "type=bind,source=/m,destination=/data/sub",
		"--mount", "type=bind,\"source=/tmp/a,b/ctrun-1000/run1\",destination=/.ctrun,ro",
		"--mount", "type=bind,source=/opt/ctrun/ctrun-agent,destination=/.ctrun/agent,ro",
		"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
	ctr_plan_free(&p);
	spec_free(&s);
}

/* TrimSpace trims Go's unicode.IsSpace at both ends of each piece [A-bind]:
 * \v, \f, U+0085, U+00A0, U+3000 too.  Inside a path they are kept. */
static void test_go_spaces_at_either_end_need_mount(void **state)
{
	static const char *const odd[] = { "/data/trail ", "/data/vt\v", "/data/nbsp\xc2\xa0",
					   "/data/nel\xc2\x85", "/data/ideo\xe3\x80\x80",
					   "\f/data", NULL };

	(void)state;
	for (size_t i = 0; odd[i] != NULL; i++) {
		struct ctr_spec s;
		struct ctr_plan p = { 0 };
		struct err e = { 0 };

		spec_init(&s, "apptainer", "apptainer");
		add(&s, "/data/ok", odd[i], false);
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
		assert_string_equal(p.argv.v[3], "--mount");
		ctr_plan_free(&p);
		spec_free(&s);
	}
	{
		struct ctr_spec s;
		struct ctr_plan p = { 0 };
		struct err e = { 0 };

		spec_init(&s, "apptainer", "apptainer");
		add(&s, "/data/in\xc2\xa0side", "/d", false);
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
		assert_string_equal(p.argv.v[3], "--bind");
		assert_string_equal(p.argv.v[4], "/data/in\xc2\xa0side:/d");
		ctr_plan_free(&p);
		spec_free(&s);
	}
}

/* No --mount before apptainer 1.0 / SingularityCE 3.9 (Singularity 3.4.2
 * has none: cmd/internal/cli/action_flags.go defines no mount flag): such a
 * path is refused in one line naming the release; plain paths still run. */
static void test_old_releases_refuse_what_needs_mount(void **state)
{
	const struct app_version *old[] = { &sing342, &sce38, NULL };
	const char *names[] = { "Singularity 3.4.2", "SingularityCE 3.8.0" };

	(void)state;
	for (size_t i = 0; old[i] != NULL; i++) {
		struct ctr_spec s;
		struct ctr_plan p = { 0 };
		struct err e = { 0 };

		spec_init(&s, "singularity", "singularity");
		APP(&s)->app = *old[i];
		add(&s, "/data/a,b", "/in", false);
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, names[i]));
		assert_non_null(strstr(e.msg, "/data/a,b"));
		assert_non_null(strstr(e.msg, "SingularityCE >= 3.9"));
		assert_null(strchr(e.msg, '\n'));
		ctr_plan_free(&p);
		spec_free(&s);
	}
	{
		struct ctr_spec s;
		struct ctr_plan p = { 0 };
		struct err e = { 0 };

		spec_init(&s, "singularity", "singularity");
		APP(&s)->app = sing342;
		add(&s, "/data/plain", "/in", true);
		assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
		assert_argv(&p, (const char *const[]){
			"singularity", "exec", "--cleanenv", "--bind", "/data/plain:/in:ro",
			"/images/pytorch.sif", "/.ctrun/agent", "/.ctrun/spec", NULL });
		ctr_plan_free(&p);
		spec_free(&s);
	}
}

/* The user's APPTAINER_* / SINGULARITY_* settings (APPTAINER_BIND,
 * APPTAINER_CONTAINALL, SINGULARITYENV_X...) would change the container
 * under ctrun: removed from the runtime's environment, but for where it
 * keeps its cache and temporary files. */
static void test_user_runtime_settings_are_removed(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(strv_find(&p.unsetenv, "APPTAINER*") >= 0);
	assert_true(strv_find(&p.unsetenv, "SINGULARITY*") >= 0);
	assert_true(strv_find(&p.keepenv, "APPTAINER_CACHEDIR") >= 0);
	assert_true(strv_find(&p.keepenv, "SINGULARITY_TMPDIR") >= 0);
	assert_true(strv_find(&p.keepenv, "APPTAINER_BIND") < 0);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --gpu-isolation: --contain and --no-home, /tmp, /dev/shm and $HOME bound
 * back first, then only the container's GPU nodes, the user's binds, and
 * the driver's files onto empty files of the run directory (after the run
 * directory's own bind); inside, the GPUs are 0..n-1. */
static void test_gpu_isolation(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	s.gpus = true;
	s.slurm = true;
	s.gpu_ids = "1,3";
	APP(&s)->gpu_isolate = true;
	snprintf(APP(&s)->home, sizeof(APP(&s)->home), "/home/u");
	add(&s, "/home/u/proj", "/home/u/proj", false);
	add(&s, "/tmp/ctrun-1000/run1", "/.ctrun", true);
	assert_int_equal(mounts_add(&APP(&s)->driver, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54",
				    "/.ctrun/driver/libcuda.so.1", true, true, &e), 0);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(strv_find(&p.argv, "--nv") < 0);
	assert_true(at(&p, "--contain") < at(&p, "/tmp:/tmp"));
	assert_true(at(&p, "--no-home") < at(&p, "/tmp:/tmp"));
	assert_true(at(&p, "/tmp:/tmp") < at(&p, "/dev/shm:/dev/shm"));
	assert_true(at(&p, "/dev/shm:/dev/shm") < at(&p, "/home/u:/home/u"));
	assert_true(at(&p, "/home/u:/home/u") < at(&p, "/dev/nvidia1:/dev/nvidia1"));
	assert_true(at(&p, "/dev/nvidia1:/dev/nvidia1") < at(&p, "/dev/nvidia3:/dev/nvidia3"));
	assert_true(strv_find(&p.argv, "/dev/nvidia0:/dev/nvidia0") < 0);
	assert_true(at(&p, "/dev/nvidia3:/dev/nvidia3") < at(&p, "/home/u/proj:/home/u/proj"));
	assert_true(at(&p, "/tmp/ctrun-1000/run1:/.ctrun:ro") <
		    at(&p, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54:/.ctrun/driver/libcuda.so.1:ro"));
	assert_int_equal(p.nfiles, 1);
	assert_string_equal(p.files[0].path, "/tmp/ctrun-1000/run1/driver/libcuda.so.1");
	assert_int_equal(p.files[0].len, 0);
	assert_int_equal(p.agent_env.n, 1);
	assert_string_equal(p.agent_env.v[0], "CUDA_VISIBLE_DEVICES=0,1");
	assert_int_equal(p.agent_libdirs.n, 1);
	assert_string_equal(p.agent_libdirs.v[0], "/.ctrun/driver");
	assert_true(p.gpus_renumbered);
	ctr_plan_free(&p);
	spec_free(&s);

	/* Without Slurm and without isolation: --nv, and the GPUs by host id. */
	spec_init(&s, "apptainer", "apptainer");
	s.gpus = true;
	s.gpu_ids = "1,3";
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), 0);
	assert_true(at(&p, "--nv") > 0);
	assert_true(strv_find(&p.argv, "--contain") < 0);
	assert_string_equal(p.agent_env.v[0], "CUDA_VISIBLE_DEVICES=1,3");
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

		spec_init(&s, "apptainer", "apptainer");
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

/* apptainer binds every path nosuid,nodev (its addUserbindsMount: c.suidFlag
 * | MS_NODEV) and has no syntax to ask otherwise: refused, not ignored. */
static void test_suid_or_dev_asked_is_refused(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "apptainer", "apptainer");
	add(&s, "/data", "/data", false);
	s.mounts.v[s.mounts.n - 1].suid = true;
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "nosuid,nodev"));
	assert_non_null(strstr(e.msg, "'suid'"));
	ctr_plan_free(&p);
	spec_free(&s);
	/* pyxis's unbindable: apptainer's binds take no propagation either. */
	spec_init(&s, "apptainer", "apptainer");
	add(&s, "/data", "/data", false);
	s.mounts.v[s.mounts.n - 1].unbindable = true;
	p = (struct ctr_plan){ 0 };
	e = (struct err){ 0 };
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'unbindable'"));
	ctr_plan_free(&p);
	spec_free(&s);
}

/* tmpfs:DST: --bind takes host paths only, so one line naming the runtime. */
static void test_tmpfs_is_refused_naming_the_runtime(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct ctr_mount t;
	struct err e = { 0 };

	(void)state;
	spec_init(&s, "singularity", "singularity");
	assert_int_equal(mount_parse("tmpfs:/mytmpfs:size=1m", "/", &t, &e), 0);
	assert_int_equal(mounts_add_copy(&s.mounts, &t, &e), 0);
	mount_free(&t);
	assert_int_equal(rt_apptainer_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "mount tmpfs:/mytmpfs: singularity cannot mount a tmpfs"));
	assert_null(strchr(e.msg, '\n'));
	ctr_plan_free(&p);
	spec_free(&s);
}

/* `--version` answers (apptainer cmd/internal/cli/apptainer.go: "%s version
 * %s" of buildcfg.PACKAGE_NAME; SingularityCE's is "singularity-ce"). */
static void test_version_lines(void **state)
{
	struct app_version v;
	char name[64];

	(void)state;
	app_version_parse("apptainer version 1.3.4\n", &v);
	assert_int_equal(v.flavor, APP_APPTAINER);
	assert_string_equal(app_version_name(&v, name, sizeof(name)), "apptainer 1.3.4");
	assert_true(app_has_mount(&v));
	assert_false(app_has_no_oci(&v));
	app_version_parse("apptainer version 1.2.5-1.el8", &v);
	assert_int_equal(v.minor, 2);
	assert_int_equal(v.patch, 5);
	app_version_parse("singularity-ce version 4.1.0-jammy\n", &v);
	assert_int_equal(v.flavor, APP_SINGULARITYCE);
	assert_true(app_has_mount(&v));
	assert_true(app_has_no_oci(&v));
	app_version_parse("singularity-ce version 3.9.0", &v);
	assert_true(app_has_mount(&v));
	assert_false(app_has_no_oci(&v));
	app_version_parse("singularity version 3.4.2\n", &v);
	assert_int_equal(v.flavor, APP_SINGULARITY);
	assert_string_equal(app_version_name(&v, name, sizeof(name)), "Singularity 3.4.2");
	assert_false(app_has_mount(&v));
	app_version_parse("apptainer version 1.0.0", &v);
	assert_true(app_has_mount(&v));
	app_version_parse("apptainer version", &v);
	assert_int_equal(v.flavor, APP_UNKNOWN);
	assert_false(app_has_mount(&v));
	app_version_parse("", &v);
	assert_string_equal(app_version_name(&v, name, sizeof(name)), "an unknown version");
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
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(PICK("auto", IMAGE_SQUASHFS, "/i.sqsh", fake_have), 0);
	assert_string_equal(ctr_runtime_name(rt), "apptainer"); /* enroot is not installed */
	assert_string_equal(bin, "/usr/bin/apptainer");
	assert_int_equal(PICK("auto", IMAGE_DOCKER_ARCHIVE, "/i.tar", fake_have), 0);
	assert_string_equal(ctr_runtime_name(rt), "oci");
	assert_string_equal(bin, "/usr/bin/runc");
	assert_int_equal(PICK("auto", IMAGE_DIR, "/i", fake_have), 0);
	assert_string_equal(ctr_runtime_name(rt), "oci");
}

static void test_none_installed_names_what_was_looked_for(void **state)
{
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(PICK("auto", IMAGE_SIF, "/i.sif", have_nothing), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "no container runtime for /i.sif (sif): looked for apptainer, "
			    "singularity, runc and crun in PATH; install one of them or add its "
			    "directory to PATH");
}

static void test_explicit_runtime_must_fit_and_be_installed(void **state)
{
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(PICK("enroot", IMAGE_SIF, "/i.sif", fake_have), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "cannot run /i.sif (sif): use --runtime apptainer or "
				      "singularity or oci"));
	assert_int_equal(PICK("enroot", IMAGE_SQUASHFS, "/i.sqsh", fake_have), -1);
	assert_non_null(strstr(e.msg, "enroot not found"));
	assert_int_equal(PICK("apptainer", IMAGE_OCI_ARCHIVE, "/i.tar", fake_have), -1);
	assert_non_null(strstr(e.msg, "use --runtime oci"));
	assert_int_equal(PICK("oci", IMAGE_SIF, "/i.sif", fake_have), 0);
	assert_string_equal(ctr_runtime_name(rt), "oci");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_with_plain_binds),
		cmocka_unit_test(test_shell_gets_pwd),
		cmocka_unit_test(test_image_default_without_run),
		cmocka_unit_test(test_singularityce_nv_and_entrypoint),
		cmocka_unit_test(test_special_paths_send_every_bind_as_mount),
		cmocka_unit_test(test_order_is_kept),
		cmocka_unit_test(test_go_spaces_at_either_end_need_mount),
		cmocka_unit_test(test_old_releases_refuse_what_needs_mount),
		cmocka_unit_test(test_user_runtime_settings_are_removed),
		cmocka_unit_test(test_gpu_isolation),
		cmocka_unit_test(test_newline_and_carriage_return_are_refused),
		cmocka_unit_test(test_version_lines),
		cmocka_unit_test(test_suid_or_dev_asked_is_refused),
		cmocka_unit_test(test_tmpfs_is_refused_naming_the_runtime),
		cmocka_unit_test(test_auto_picks_an_installed_runtime_that_fits),
		cmocka_unit_test(test_none_installed_names_what_was_looked_for),
		cmocka_unit_test(test_explicit_runtime_must_fit_and_be_installed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
