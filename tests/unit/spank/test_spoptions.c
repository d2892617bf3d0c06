/* Unit tests of the SPANK plugin's options (spank/spoptions.c,
 * spank/spmounts.c): pyxis 0.24's syntax and errors (its tests/invalid_args.bats, mounts.bats,
 * env_vars.bats), what ctrun refuses, and the `ctrun __hold` command line
 * they become; the plugstack arguments (spconf.c); a task's environment
 * from the container's (spenv.c). */
#include "ctrtest.h"
#include "spconf.h"
#include "spenv.h"
#include "spoptions.h"
#include "sprunning.h"

struct fixture {
	struct sp_args a;
	struct sp_conf c;
	struct err e;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct err e = { 0 };

	assert_non_null(f);
	sp_args_init(&f->a);
	assert_int_equal(sp_conf_parse(&f->c, 0, NULL, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	sp_args_free(&f->a);
	free(f);
	return 0;
}

/* Sets one option; the return value, e filled on error. */
static int set(struct fixture *f, enum sp_opt o, int val, const char *arg)
{
	memset(&f->e, 0, sizeof(f->e));
	return sp_args_set(&f->a, o, val, arg, &f->e);
}

static void refused(struct fixture *f, enum sp_opt o, int val, const char *arg, const char *msg)
{
	if (set(f, o, val, arg) != -1)
		fail_msg("%s was accepted", arg != NULL ? arg : "(flag)");
	assert_int_equal(f->e.code, EXIT_USAGE);
	if (strstr(f->e.msg, msg) == NULL)
		fail_msg("'%s' does not say '%s'", f->e.msg, msg);
}

/* `ctrun __hold`'s arguments, joined with spaces. */
static char *hold_line(struct fixture *f, const char *script, const char *pmix)
{
	static char line[4096];
	struct strv argv = { 0 };
	size_t len = 0;

	memset(&f->e, 0, sizeof(f->e));
	if (sp_args_hold_argv(&f->a, &f->c, script, pmix, &argv, &f->e) != 0)
		fail_msg("%s", f->e.msg);
	line[0] = '\0';
	for (size_t i = 0; i < argv.n; i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", i ? " " : "",
					argv.v[i]);
	strv_free(&argv);
	return line;
}

static void test_empty_arguments_are_refused_naming_the_option(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_IMAGE, 0, "", "--container-image: argument required");
	refused(f, SP_MOUNTS, 0, "", "--container-mounts: argument required");
	refused(f, SP_WORKDIR, 0, "", "--container-workdir: argument required");
	refused(f, SP_ENV, 0, "", "--container-env: argument required");
	refused(f, SP_NAME, 0, "", "--container-name: argument required");
	refused(f, SP_SAVE, 0, "", "--container-save: argument required");
}

static void test_a_very_long_image_is_refused(void **state)
{
	struct fixture *f = *state;
	char *big = malloc(PATH_MAX + 10);

	assert_non_null(big);
	memset(big, 'a', PATH_MAX + 9);
	big[PATH_MAX + 9] = '\0';
	refused(f, SP_IMAGE, 0, big, "--container-image: the argument is longer than");
	free(big);
}

static void test_the_same_value_twice_is_fine_another_is_not(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "ubuntu:24.04"), 0);
	assert_int_equal(set(f, SP_IMAGE, 0, "ubuntu:24.04"), 0);
	refused(f, SP_IMAGE, 0, "ubuntu:22.04", "--container-image specified multiple times");
}

static void test_flag_pairs_conflict(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_WRITABLE, 0, NULL), 0);
	refused(f, SP_WRITABLE, 1, NULL,
		"both --container-writable and --container-readonly were specified");
	assert_int_equal(set(f, SP_MOUNT_HOME, 1, NULL), 0);
	refused(f, SP_MOUNT_HOME, 0, NULL, "both --container-mount-home and --no-container-mount-home");
}

static void test_mounts_pyxis_syntax_becomes_ctrun_mounts(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/img.sqsh"), 0);
	assert_int_equal(set(f, SP_MOUNTS, 0, "/home:/test-mnt,/var/lib,./data:/data:ro+rprivate,"
				       "/dev/null:/null:nosuid+nodev+rbind,/tmp:/mnt:unbindable+ro"), 0);
	/* Slurm hands the value again: nothing doubles. */
	assert_int_equal(set(f, SP_MOUNTS, 0, "/home:/test-mnt"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /img.sqsh --mount /home:/test-mnt --mount /var/lib:/var/lib "
			    "--mount ./data:/data:ro --mount /dev/null:/null:rw "
			    "--mount /tmp:/mnt:ro,unbindable --workdir / --entrypoint=false");
}

/* pyxis's tmpfs: and umount: entries: ctrun's --mount forms of the same
 * names, the '+'-joined flags a tmpfs's comma-separated options. */
static void test_mounts_tmpfs_and_umount(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/img.sqsh"), 0);
	assert_int_equal(set(f, SP_MOUNTS, 0, "tmpfs:/mytmpfs,tmpfs:/t:huge=within_size+size=1m,"
				       "umount:/root"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /img.sqsh --mount tmpfs:/mytmpfs "
			    "--mount tmpfs:/t:huge=within_size,size=1m --mount umount:/root "
			    "--workdir / --entrypoint=false");
}

static void test_mount_paths_with_spaces_and_backslashes(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_int_equal(set(f, SP_MOUNTS, 0, "/tmp/a b\\c:/mnt/my mount"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image /i --mount /tmp/a b\\\\c:/mnt/my mount "
			    "--workdir / --entrypoint=false");
}

static void test_bad_mounts_are_refused(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_MOUNTS, 0, ":", "--container-mounts: invalid format: :");
	refused(f, SP_MOUNTS, 0, "/tmp:", "--container-mounts: invalid format: /tmp:");
	refused(f, SP_MOUNTS, 0, "/tmp:mnt:ro", "mount target must be a relative path or an "
		"absolute path");
	refused(f, SP_MOUNTS, 0, "home:/x", "mount source must be a relative path or an absolute");
	refused(f, SP_MOUNTS, 0, "/home:../home", "ctrun takes the target as an absolute path");
	refused(f, SP_MOUNTS, 0, "/tmp:/mnt:x-create=dir+ro",
		"flag 'x-create=dir' of /tmp:/mnt:x-create=dir+ro is not supported by ctrun");
	refused(f, SP_MOUNTS, 0, "tmpfs:mnt", "tmpfs needs an absolute target");
	refused(f, SP_MOUNTS, 0, "tmpfs", "tmpfs: tmpfs needs an absolute target");
	refused(f, SP_MOUNTS, 0, "umount:/root:ro", "umount takes no flags");
	refused(f, SP_MOUNTS, 0, "/a:/b:ro+rw", "is both ro and rw");
	/* One bad entry of a list: the list is refused. */
	refused(f, SP_MOUNTS, 0, "/tmp:/mnt,/x:", "invalid format: /x:");
}

static void test_env_names(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_ENV, 0, "FOO,", "--container-env: invalid format: FOO,");
	refused(f, SP_ENV, 0, "A=1", "--container-env: invalid format: A=1");
	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_int_equal(set(f, SP_ENV, 0, "CUDA_VERSION,LD_LIBRARY_PATH"), 0);
	assert_int_equal(set(f, SP_ENV, 0, "CUDA_VERSION"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /i --workdir / --entrypoint=false --env CUDA_VERSION "
			    "--env LD_LIBRARY_PATH");
}

static void test_names_and_their_flags(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_NAME, 0, "/tmp/foo", "is not a name");
	refused(f, SP_NAME, 0, ":exec", "--container-name: empty name");
	refused(f, SP_NAME, 0, "dev:attach", "flag must be \"auto\", \"create\", \"exec\" or");
	assert_int_equal(set(f, SP_NAME, 0, "dev:no_exec"), 0);
	assert_string_equal(f->a.name, "dev");
	assert_string_equal(f->a.name_flags, "no_exec");
	refused(f, SP_NAME, 0, "dev:create", "--container-name specified multiple times");
}

static void test_a_very_long_name_is_refused(void **state)
{
	struct fixture *f = *state;
	char name[301];

	memset(name, 'a', 300);
	name[300] = '\0';
	refused(f, SP_NAME, 0, name, "is not a name");
}

static void test_save_to_a_directory_is_refused(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_SAVE, 0, "/tmp/", "--container-save: target is a directory");
	refused(f, SP_SAVE, 0, "./", "--container-save: target is a directory");
}

static void test_unshare_checked_then_given_to_ctrun(void **state)
{
	struct fixture *f = *state;

	refused(f, SP_UNSHARE, 0, "net,foo", "--container-unshare: unknown namespace 'foo'");
	refused(f, SP_UNSHARE, 0, "net,", "empty namespace argument");
	assert_int_equal(set(f, SP_UNSHARE, 0, "net,uts"), 0);
	assert_int_equal(sp_args_check(&f->a, &f->e), 0);
	assert_int_equal(set(f, SP_IMAGE, 0, "/i.sqsh"), 0);
	assert_non_null(strstr(hold_line(f, NULL, NULL), " --unshare net,uts"));
}

static void test_image_references_are_checked_before_any_node(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "Ubuntu:24.04"), 0);
	assert_int_equal(sp_args_check(&f->a, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "--container-image: "));
	sp_args_free(&f->a);
	assert_int_equal(set(f, SP_IMAGE, 0, "dockerd://ubuntu"), 0);
	assert_int_equal(sp_args_check(&f->a, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "does not import from a local daemon"));
}

static void test_references_and_paths_reach_ctrun(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "nvcr.io#nvidia/pytorch:24.06-py3"), 0);
	assert_int_equal(sp_args_check(&f->a, &f->e), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image docker://nvcr.io#nvidia/pytorch:24.06-py3 "
			    "--workdir / --entrypoint=false");
	sp_args_free(&f->a);
	assert_int_equal(set(f, SP_IMAGE, 0, "docker://ubuntu"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image docker://ubuntu --workdir / --entrypoint=false");
	sp_args_free(&f->a);
	assert_int_equal(set(f, SP_IMAGE, 0, "./ubuntu.sqsh"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image ./ubuntu.sqsh --workdir / --entrypoint=false");
}

static void test_flags_become_ctrun_options(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_int_equal(set(f, SP_MOUNT_HOME, 0, NULL), 0);
	assert_int_equal(set(f, SP_REMAP_ROOT, 1, NULL), 0);
	assert_int_equal(set(f, SP_WRITABLE, 1, NULL), 0);
	assert_int_equal(set(f, SP_ENTRYPOINT, 1, NULL), 0);
	assert_int_equal(set(f, SP_WORKDIR, 0, "../"), 0);
	assert_int_equal(set(f, SP_RUNTIME, 0, "oci"), 0);
	assert_int_equal(set(f, SP_SAVE, 0, "out.sqsh"), 0);
	assert_string_equal(hold_line(f, "/spool/job7/slurm_script", "/spool/pmix.7.0/"),
			    "--image /i --mount /spool/job7/slurm_script:/spool/job7/slurm_script:ro "
			    "--mount /spool/pmix.7.0/:/spool/pmix.7.0/ --workdir / --no-home --root --entrypoint --writable --runtime oci "
			    "--save out.sqsh");
}

/* --container-device: ctrun's own, a comma-separated list of CDI names
 * (a SPANK option reaches slurmstepd once, so one option carries them all). */
static void test_container_device_becomes_device_options(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_int_equal(set(f, SP_DEVICE, 0, "example.com/fake=dev0,nvidia.com/gpu=0"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /i --workdir / --entrypoint=false --device example.com/fake=dev0 "
			    "--device nvidia.com/gpu=0");
	assert_int_equal(set(f, SP_DEVICE, 0, "--root"), -1);
	assert_non_null(strstr(f->e.msg, "--container-device: '--root' is not a CDI device name"));
}

static void test_plugstack_defaults_apply_unless_the_option_says(void **state)
{
	struct fixture *f = *state;
	char *av[] = { "execute_entrypoint=yes", "runtime=enroot", "runtime_path=/run/pyxis" };

	assert_int_equal(sp_conf_parse(&f->c, 3, av, &f->e), 0);
	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /i --workdir / --entrypoint --runtime enroot");
	assert_int_equal(set(f, SP_ENTRYPOINT, 0, NULL), 0);
	assert_int_equal(set(f, SP_RUNTIME, 0, "oci"), 0);
	assert_string_equal(hold_line(f, NULL, NULL),
			    "--image /i --workdir / --entrypoint=false --runtime oci");
}

static void test_plugstack_errors_name_the_argument(void **state)
{
	struct fixture *f = *state;
	char *bad1[] = { "execute_entrypoint=maybe" }, *bad2[] = { "bogus=1" },
	     *bad3[] = { "ctrun=ctrun" }, *bad4[] = { "container_scope=node" };

	assert_int_equal(sp_conf_parse(&f->c, 1, bad1, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "execute_entrypoint: invalid value: maybe"));
	assert_int_equal(sp_conf_parse(&f->c, 1, bad2, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "unknown argument: bogus=1"));
	assert_int_equal(sp_conf_parse(&f->c, 1, bad3, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "ctrun=ctrun: an absolute path"));
	assert_int_equal(sp_conf_parse(&f->c, 1, bad4, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "container_scope: invalid value: node"));
}

static const char *vars[][2] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };

static const char *getvar(const char *name, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++)
		if (vars[i][0] != NULL && strcmp(vars[i][0], name) == 0)
			return vars[i][1];
	return NULL;
}

static void test_pyxis_variables_are_defaults_under_the_command_line(void **state)
{
	struct fixture *f = *state;

	vars[0][0] = "PYXIS_CONTAINER_IMAGE", vars[0][1] = "ubuntu:22.04";
	vars[1][0] = "PYXIS_CONTAINER_READONLY", vars[1][1] = "0";
	vars[2][0] = "PYXIS_CONTAINER_MOUNT_HOME", vars[2][1] = "perhaps";
	assert_int_equal(set(f, SP_IMAGE, 0, "ubuntu:24.04"), 0);
	assert_int_equal(sp_args_env(&f->a, getvar, NULL, &f->e), 0);
	assert_string_equal(f->a.image, "ubuntu:24.04");
	assert_int_equal(f->a.writable, 1);
	/* pyxis: a boolean it cannot read is no setting. */
	assert_int_equal(f->a.mount_home, -1);
	memset(vars, 0, sizeof(vars));
}

static void test_options_without_a_container_are_ignored_with_a_note(void **state)
{
	struct fixture *f = *state;
	struct strv notes = { 0 };

	assert_int_equal(set(f, SP_MOUNTS, 0, "/a:/b"), 0);
	assert_false(sp_args_enabled(&f->a, &notes));
	assert_int_equal(notes.n, 1);
	assert_non_null(strstr(notes.v[0], "ignoring --container-mounts because neither"));
	strv_free(&notes);
}

static void test_task_env_takes_what_the_container_changed(void **state)
{
	char *given[] = { "PATH=/host/bin", "HOME=/home/u", "FOO=bar", "LD_PRELOAD=x.so",
			  "SLURM_JOB_ID=7", NULL };
	char *held[] = { "PATH=/usr/bin:/bin", "HOME=/home/u", "FOO=bar", "SLURM_JOB_ID=7",
			 "CUDA_VERSION=12.0", NULL };
	struct strv set_ = { 0 }, unset = { 0 };

	(void)state;
	assert_int_equal(sp_env_diff(given, held, &set_, &unset), 0);
	assert_int_equal(set_.n, 2);
	assert_string_equal(set_.v[0], "PATH=/usr/bin:/bin");
	assert_string_equal(set_.v[1], "CUDA_VERSION=12.0");
	assert_int_equal(unset.n, 1);
	assert_string_equal(unset.v[0], "LD_PRELOAD");
	strv_free(&set_);
	strv_free(&unset);
}

static void test_ctrun_env_output_first_block(void **state)
{
	struct strv out = { 0 };

	(void)state;
	assert_int_equal(sp_env_lines("LOCAL_RANK=1\nRANK=3\nnoise\n\nRANK=4\n", &out), 0);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0], "LOCAL_RANK=1");
	assert_string_equal(out.v[1], "RANK=3");
	strv_free(&out);
}

static void test_running_container_record_round_trip(void **state)
{
	struct sp_running r = { .pid = 4242, .start = 99, .cwd = "/work dir" }, back;
	struct err e = { 0 };
	size_t len = 0;
	char *text;

	(void)state;
	assert_int_equal(strv_push(&r.set, "PATH=/usr/bin"), 0);
	assert_int_equal(strv_push(&r.set, "A=x y"), 0);
	assert_int_equal(strv_push(&r.unset, "LD_PRELOAD"), 0);
	text = sp_running_format(&r, &len);
	assert_non_null(text);
	assert_int_equal(sp_running_parse(text, len, &back, &e), 0);
	assert_int_equal(back.pid, 4242);
	assert_int_equal(back.start, 99);
	assert_string_equal(back.cwd, "/work dir");
	assert_int_equal(back.set.n, 2);
	assert_string_equal(back.set.v[1], "A=x y");
	assert_int_equal(back.unset.n, 1);
	assert_string_equal(back.unset.v[0], "LD_PRELOAD");
	sp_running_free(&back);
	/* Cut anywhere, it is refused, never read past its end. */
	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(sp_running_parse(text, cut, &back, &e), -1);
	free(text);
	strv_free(&r.set);
	strv_free(&r.unset);
}

/* What the user chose, either way, reaches ctrun over its ctrun.ini
 * defaults (a site's `writable = true`, `root = true`, `no_home = true`,
 * `entrypoint = true`): --container-readonly, --no-container-remap-root,
 * --container-mount-home and --no-container-entrypoint say so; what the
 * user did not choose stays the site's (no option). */
static void test_the_users_choice_wins_over_ctrun_ini(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image /i --workdir / --entrypoint=false");
	assert_int_equal(set(f, SP_WRITABLE, 0, NULL), 0);
	assert_int_equal(set(f, SP_REMAP_ROOT, 0, NULL), 0);
	assert_int_equal(set(f, SP_MOUNT_HOME, 1, NULL), 0);
	assert_int_equal(set(f, SP_ENTRYPOINT, 0, NULL), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image /i --workdir / --no-home=false "
			    "--root=false --entrypoint=false --writable=false");
}

/* default_workdir: the image's working directory (pyxis's rule: the
 * hold enters it, so ctrun binds no working directory) or srun's. */
static void test_default_workdir_image_or_srun(void **state)
{
	struct fixture *f = *state;
	char *srun[] = { "default_workdir=srun" }, *bad[] = { "default_workdir=/tmp" };

	assert_true(f->c.workdir_image);
	assert_int_equal(sp_conf_parse(&f->c, 1, srun, &f->e), 0);
	assert_false(f->c.workdir_image);
	assert_int_equal(set(f, SP_IMAGE, 0, "/i"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image /i --entrypoint=false");
	assert_int_equal(set(f, SP_WORKDIR, 0, "/w"), 0);
	assert_string_equal(hold_line(f, NULL, NULL), "--image /i --workdir / --entrypoint=false");
	assert_int_equal(sp_conf_parse(&f->c, 1, bad, &f->e), -1);
	assert_non_null(strstr(f->e.msg, "default_workdir: invalid value: /tmp (image or srun)"));
}

/* The binds' sources as given, for the node's "source path does not
 * exist" check (pyxis's line): not tmpfs or umount entries, once each,
 * none kept from a list refused as a whole. */
static void test_bind_sources_are_kept_for_the_node(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(set(f, SP_MOUNTS, 0, "/a:/x,tmpfs:/t,./b:/y:ro,/a:/z,umount:/root"), 0);
	assert_int_equal(f->a.sources.n, 2);
	assert_string_equal(f->a.sources.v[0], "/a");
	assert_string_equal(f->a.sources.v[1], "./b");
	refused(f, SP_MOUNTS, 0, "/c:/x,/d:", "invalid format");
	assert_int_equal(f->a.sources.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty_arguments_are_refused_naming_the_option,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_very_long_image_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_same_value_twice_is_fine_another_is_not,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_flag_pairs_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mounts_tmpfs_and_umount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mounts_pyxis_syntax_becomes_ctrun_mounts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mount_paths_with_spaces_and_backslashes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_mounts_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_and_their_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_very_long_name_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_to_a_directory_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unshare_checked_then_given_to_ctrun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_references_are_checked_before_any_node,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_references_and_paths_reach_ctrun, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flags_become_ctrun_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plugstack_defaults_apply_unless_the_option_says,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_plugstack_errors_name_the_argument, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_pyxis_variables_are_defaults_under_the_command_line, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_options_without_a_container_are_ignored_with_a_note, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_users_choice_wins_over_ctrun_ini, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_default_workdir_image_or_srun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_sources_are_kept_for_the_node, setup,
						teardown),
		cmocka_unit_test(test_task_env_takes_what_the_container_changed),
		cmocka_unit_test(test_ctrun_env_output_first_block),
		cmocka_unit_test(test_running_container_record_round_trip),
		cmocka_unit_test_setup_teardown(test_container_device_becomes_device_options, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
