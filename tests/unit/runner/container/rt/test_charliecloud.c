/* Golden tests of the Charliecloud adapter: the exact ch-run argv (ids,
 * the image's environment, the staged binds, the driver's files, the
 * working directory, "--" before the command), the overlay it runs over,
 * and what it refuses (a SIF, a run directory with ':').
 * tests/integration/t_charliecloud.sh runs such plans through the real
 * ch-run 0.31. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "charliecloud/charliecloud.h"

/* The driver's own state (charliecloud.h), one per test. */
static struct ch_own own;

static void spec_init(struct ctr_spec *s)
{
	struct err e = { 0 };

	memset(s, 0, sizeof(*s));
	memset(&own, 0, sizeof(own));
	s->own = &own;
	s->bin = "/usr/bin/ch-run";
	s->image = "/images/pytorch.sqsh";
	s->kind = IMAGE_SQUASHFS;
	s->rootfs = "/var/cache/ctrun/rootfs/squashfs-0123";
	s->rundir = "/tmp/ctrun-1000/run1";
	s->cwd = "/home/u/proj";
	s->uid = 1000;
	s->gid = 100;
	s->rootless = true;
	s->agent = true;
	assert_int_equal(strv_push(&s->argv, "/.ctrun/agent"), 0);
	assert_int_equal(strv_push(&s->argv, "/.ctrun/spec"), 0);
	assert_int_equal(mounts_add(&s->mounts, "/home/u/proj", "/home/u/proj", false, false, &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/tmp/ctrun-1000/run1", "/.ctrun", true, false, &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/opt/ctrun/ctrun-agent", "/.ctrun/agent", true, true,
				    &e), 0);
}

static void spec_free(struct ctr_spec *s)
{
	strv_free(&s->argv);
	strv_free(&s->env);
	mounts_free(&s->mounts);
	mounts_free(&own.driver);
}

static void assert_argv(const struct ctr_plan *p, const char *const *want)
{
	size_t n = 0;

	for (; want[n] != NULL; n++) {
		assert_true(n < p->argv.n);
		assert_string_equal(p->argv.v[n], want[n]);
	}
	assert_int_equal(p->argv.n, n);
}

static void test_agent_argv_over_the_overlay(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };
	const char *const argv[] = {
		"/usr/bin/ch-run", "--uid=1000", "--gid=100", "--env-no-expand",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/0:/home/u/proj",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/1:/.ctrun",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/2:/.ctrun/agent",
		"/tmp/ctrun-1000/run1/rootfs", "--", "/.ctrun/agent", "/.ctrun/spec", NULL,
	};

	(void)state;
	spec_init(&s);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_argv(&p, argv);
	/* The OCI adapter's overlay, with every source staged at ovl/b/N. */
	assert_true(p.ovl);
	assert_true(p.ovl_stage);
	/* ch-run refuses to start without $USER: ctrun sets one where unset. */
	assert_true(p.need_user);
	assert_string_equal(p.ovl_lower, "/var/cache/ctrun/rootfs/squashfs-0123");
	assert_string_equal(p.ovl_tmp, "/tmp/ctrun-1000/run1/ovl");
	assert_string_equal(p.ovl_merged, "/tmp/ctrun-1000/run1/rootfs");
	/* Nothing written, nothing set: ch-run passes the environment on. */
	assert_int_equal(p.nfiles, 0);
	assert_int_equal(p.setenv.n, 0);
	assert_int_equal(p.unsetenv.n, 0);
	assert_int_equal(p.agent_entry.n, 0);
	assert_int_equal(p.agent_libdirs.n, 0);
	assert_true(p.agent_image_scripts);
	assert_false(p.agent_complete_env);
	assert_false(p.gpus_renumbered);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_root_runs_as_root(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.uid = 0;
	s.gid = 0;
	s.rootless = false;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[1], "--uid=0");
	assert_string_equal(p.argv.v[2], "--gid=0");
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --root as a user: ch-run maps --uid 0 to its own uid (the caller). */
static void test_root_option_asks_ch_run_for_uid_0(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.as_root = true;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[1], "--uid=0");
	assert_string_equal(p.argv.v[2], "--gid=0");
	/* ch-run makes its own namespace: ctrun's agent does not switch. */
	assert_false(p.ident_nest);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_image_environment_quoted_byte_for_byte(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(strv_push(&s.env, "PATH=/opt/conda/bin:/usr/bin:/bin"), 0);
	assert_int_equal(strv_push(&s.env, "Q='quoted' $HOME x=y"), 0);
	assert_int_equal(strv_push(&s.env, "EMPTY="), 0);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	/* ch-run strips one pair of single quotes; --env-no-expand keeps '$'. */
	assert_string_equal(p.argv.v[3], "--env-no-expand");
	assert_string_equal(p.argv.v[4], "--set-env=PATH='/opt/conda/bin:/usr/bin:/bin'");
	assert_string_equal(p.argv.v[5], "--set-env=Q=''quoted' $HOME x=y'");
	assert_string_equal(p.argv.v[6], "--set-env=EMPTY=''");
	assert_string_equal(p.argv.v[7], "-b");
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_paths_with_colons_spaces_and_newlines_are_staged(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };
	const char *const argv[] = {
		"/usr/bin/ch-run", "--uid=1000", "--gid=100", "--env-no-expand",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/0:/data/a:b c",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/1:/x\ny",
		"/tmp/ctrun-1000/run1/rootfs", "--", "/.ctrun/agent", "/.ctrun/spec", NULL,
	};

	(void)state;
	spec_init(&s);
	mounts_free(&s.mounts);
	/* ch-run splits --bind at the first ':' only: the source is ctrun's
	 * staged path, the destination keeps its colons. */
	assert_int_equal(mounts_add(&s.mounts, "/scratch/x:y", "/data/a:b c", true, false, &e), 0);
	assert_int_equal(mounts_add(&s.mounts, "/two\nlines", "/x\ny", false, false, &e), 0);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_argv(&p, argv);
	ctr_plan_free(&p);
	spec_free(&s);
}

/* tmpfs:DST: ch-run's -b binds host paths only: one line naming it. */
static void test_tmpfs_is_refused_naming_ch_run(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct ctr_mount t;
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(mount_parse("tmpfs:/mytmpfs", "/", &t, &e), 0);
	assert_int_equal(mounts_add_copy(&s.mounts, &t, &e), 0);
	mount_free(&t);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "mount tmpfs:/mytmpfs: /usr/bin/ch-run cannot mount a tmpfs"));
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_shell_gets_cd_and_its_command_after_dashdash(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };
	const char *const argv[] = {
		"/usr/bin/ch-run", "--uid=1000", "--gid=100", "--env-no-expand",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/0:/home/u/proj",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/1:/.ctrun",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/2:/.ctrun/agent",
		"--cd=/home/u/proj", "/tmp/ctrun-1000/run1/rootfs", "--", "/bin/bash", "-v", "--",
		"-c", NULL,
	};

	(void)state;
	spec_init(&s);
	s.agent = false;
	s.tty = true; /* ch-run leaves the terminal to the command: nothing to add */
	strv_free(&s.argv);
	assert_int_equal(strv_push(&s.argv, "/bin/bash"), 0);
	assert_int_equal(strv_push(&s.argv, "-v"), 0);
	assert_int_equal(strv_push(&s.argv, "--"), 0);
	assert_int_equal(strv_push(&s.argv, "-c"), 0);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_argv(&p, argv);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_entrypoint_is_the_agents(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.entrypoint = true;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_int_equal(p.agent_entry.n, 2);
	assert_string_equal(p.agent_entry.v[0], "/etc/rc");
	assert_string_equal(p.agent_entry.v[1], "/.singularity.d/runscript");
	/* The argv is the same: ch-run runs exactly the agent. */
	assert_string_equal(p.argv.v[p.argv.n - 2], "/.ctrun/agent");
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_gpus_bind_the_driver_files_onto_the_run_directory(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };
	const char *const argv[] = {
		"/usr/bin/ch-run", "--uid=1000", "--gid=100", "--env-no-expand",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/0:/home/u/proj",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/1:/.ctrun",
		"-b", "/tmp/ctrun-1000/run1/ovl/b/2:/.ctrun/agent",
		"-b", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54:/.ctrun/driver/libcuda.so.1",
		"-b", "/usr/bin/nvidia-smi:/.ctrun/driver/nvidia-smi",
		"/tmp/ctrun-1000/run1/rootfs", "--", "/.ctrun/agent", "/.ctrun/spec", NULL,
	};

	(void)state;
	spec_init(&s);
	s.gpus = true;
	s.slurm = true;
	s.gpu_ids = "2,3";
	assert_int_equal(mounts_add(&own.driver, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54",
				    CTR_DRIVER_DIR "/libcuda.so.1", true, true, &e), 0);
	assert_int_equal(mounts_add(&own.driver, "/usr/bin/nvidia-smi", CTR_DRIVER_DIR "/nvidia-smi",
				    true, true, &e), 0);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_argv(&p, argv);
	assert_int_equal(p.nfiles, 2);
	assert_string_equal(p.files[0].path, "/tmp/ctrun-1000/run1/driver/libcuda.so.1");
	assert_int_equal(p.files[0].len, 0);
	assert_string_equal(p.files[1].path, "/tmp/ctrun-1000/run1/driver/nvidia-smi");
	assert_int_equal(p.agent_libdirs.n, 1);
	assert_string_equal(p.agent_libdirs.v[0], CTR_DRIVER_DIR);
	/* ch-run binds the host's /dev: the GPUs keep their host numbers. */
	assert_false(p.gpus_renumbered);
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_mounted_image_is_the_holders_tree(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.holder = true;
	s.rootfs = "/proc/self/fd/7";
	s.rootfs_ns = "/tmp/ctrun-1000/run1/image";
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_string_equal(p.ovl_lower, "/tmp/ctrun-1000/run1/image");
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_sif_is_refused_naming_the_runtimes_that_run_it(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.image = "/images/torch.sif";
	s.kind = IMAGE_SIF;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "charliecloud cannot run /images/torch.sif (SIF): use "
			    "--runtime apptainer, singularity or oci");
	ctr_plan_free(&p);
	spec_free(&s);
}

static void test_run_directory_with_a_colon_is_refused(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.rundir = "/tmp/a:b/run1";
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "/tmp/a:b/run1"));
	assert_non_null(strstr(e.msg, "TMPDIR"));
	assert_null(strchr(e.msg, '\n'));
	ctr_plan_free(&p);
	spec_free(&s);
}

/* --writable: ch-run's --write keeps ctrun's overlay writable (its upper
 * layer the run's tmpfs); without it ch-run remounts the root read-only. */
static void test_writable_adds_write(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	for (size_t i = 0; i < p.argv.n; i++)
		assert_string_not_equal(p.argv.v[i], "--write");
	ctr_plan_free(&p);
	memset(&p, 0, sizeof(p));
	s.writable = true;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[4], "--write");
	ctr_plan_free(&p);
	spec_free(&s);
}

/* ch-run refuses to start where its own mount points are missing (an image
 * made with `mksquashfs -e proc sys dev`, FROM scratch): they are the
 * overlay's, made in its upper layer, as directories or files. */
static void test_ch_runs_own_mount_points_are_the_overlays(void **state)
{
	static const char *const want[][2] = {
		{ "/dev", "dir" }, { "/proc", "dir" }, { "/sys", "dir" }, { "/tmp", "dir" },
		{ "/etc/passwd", "file" }, { "/etc/group", "file" },
	};
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_int_equal(p.ovl_points.n, sizeof(want) / sizeof(*want));
	for (size_t i = 0; i < p.ovl_points.n; i++) {
		assert_string_equal(p.ovl_points.v[i].dst, want[i][0]);
		assert_string_equal(p.ovl_points.v[i].file ? "file" : "dir", want[i][1]);
		assert_string_equal(p.ovl_points.v[i].src, "/usr/bin/ch-run");
	}
	for (size_t i = 0; i < p.argv.n; i++)
		assert_string_not_equal(p.argv.v[i], "--no-passwd");
	ctr_plan_free(&p);
	spec_free(&s);
}

/* Rootless, where the overlay cannot hold /etc/passwd and /etc/group (the
 * image lacks them, its /etc is root's): ch-run binds none of its own. */
static void test_no_idfile_points_means_no_passwd(void **state)
{
	struct ctr_spec s;
	struct ctr_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	spec_init(&s);
	s.no_idfile_points = true;
	assert_int_equal(rt_charliecloud_plan(&s, &p, &e), 0);
	assert_string_equal(p.argv.v[4], "--no-passwd");
	assert_int_equal(p.ovl_points.n, 4);
	for (size_t i = 0; i < p.ovl_points.n; i++)
		assert_false(p.ovl_points.v[i].file);
	ctr_plan_free(&p);
	spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_argv_over_the_overlay),
		cmocka_unit_test(test_root_runs_as_root),
		cmocka_unit_test(test_root_option_asks_ch_run_for_uid_0),
		cmocka_unit_test(test_image_environment_quoted_byte_for_byte),
		cmocka_unit_test(test_paths_with_colons_spaces_and_newlines_are_staged),
		cmocka_unit_test(test_tmpfs_is_refused_naming_ch_run),
		cmocka_unit_test(test_shell_gets_cd_and_its_command_after_dashdash),
		cmocka_unit_test(test_entrypoint_is_the_agents),
		cmocka_unit_test(test_gpus_bind_the_driver_files_onto_the_run_directory),
		cmocka_unit_test(test_mounted_image_is_the_holders_tree),
		cmocka_unit_test(test_sif_is_refused_naming_the_runtimes_that_run_it),
		cmocka_unit_test(test_run_directory_with_a_colon_is_refused),
		cmocka_unit_test(test_writable_adds_write),
		cmocka_unit_test(test_ch_runs_own_mount_points_are_the_overlays),
		cmocka_unit_test(test_no_idfile_points_means_no_passwd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
