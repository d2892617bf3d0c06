/* Unit tests of the driver table (drivers.h): --runtime auto's order per
 * image kind is the one ctrun always had, ctrun's own start takes enroot's
 * place where enroot's configuration adds nothing (issue 33), every driver
 * is complete, and crun is the OCI driver run by crun: its plan is the oci
 * plan byte for byte but for the binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers.h"
#include "oci/oci.h"

/* auto's choices for a kind, as "a b c". */

/* ctr_pick_runtime into the test's own rt, bin and e. */
#define PICK(want_, kind_, image_, have_)                                                     \
	ctr_pick_runtime(&(struct ctr_pick){ .want = want_, .kind = kind_, .image = image_,    \
					     .have = have_ },                                   \
			 &rt, bin, sizeof(bin), &e)

static const char *auto_names(enum image_kind kind, char *buf, size_t size)
{
	const struct ctr_driver *d[16];
	size_t n = ctr_driver_auto(kind, d, 16);

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? " " : "", d[i]->name);
	return buf;
}

static void test_auto_order_per_kind_is_unchanged(void **state)
{
	char buf[256];

	(void)state;
	/* charliecloud (issue 23's fourth driver) comes last: auto takes it
	 * only where none of the others is installed; never for a SIF. */
	assert_string_equal(auto_names(IMAGE_SQUASHFS, buf, sizeof(buf)),
			    "enroot apptainer singularity oci charliecloud");
	assert_string_equal(auto_names(IMAGE_SIF, buf, sizeof(buf)), "apptainer singularity oci");
	assert_string_equal(auto_names(IMAGE_DIR, buf, sizeof(buf)),
			    "oci apptainer singularity charliecloud");
	assert_string_equal(auto_names(IMAGE_DOCKER_ARCHIVE, buf, sizeof(buf)), "oci charliecloud");
	assert_string_equal(auto_names(IMAGE_OCI_ARCHIVE, buf, sizeof(buf)), "oci charliecloud");
}

static void test_every_driver_is_complete_and_named_once(void **state)
{
	size_t n = 0;

	(void)state;
	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++, n++) {
		assert_non_null((*d)->name);
		assert_non_null((*d)->bins);
		assert_non_null((*d)->bins[0]);
		assert_non_null((*d)->plan);
		assert_ptr_equal(ctr_driver_named((*d)->name), *d);
		assert_string_not_equal((*d)->name, "auto");
	}
	assert_true(n >= 5);
	assert_null(ctr_driver_named("docker"));
}

/* A kind added to kind.h that no driver ranks would silently be refused
 * by every runtime: each kind has a driver that auto picks. */
static void test_every_kind_has_a_driver(void **state)
{
	const struct ctr_driver *d[16];

	(void)state;
	for (enum image_kind k = IMAGE_SQUASHFS; k < IMAGE_KINDS; k++)
		assert_true(ctr_driver_auto(k, d, 16) > 0);
}

static void test_root_need_comes_from_the_table(void **state)
{
	(void)state;
	assert_int_equal(ctr_root_need(ctr_driver_named("oci")), ROOT_TREE);
	assert_int_equal(ctr_root_need(ctr_driver_named("crun")), ROOT_TREE);
	assert_int_equal(ctr_root_need(ctr_driver_named("enroot")), ROOT_DRIVER);
	assert_int_equal(ctr_root_need(ctr_driver_named("apptainer")), ROOT_IMAGE_FILE);
	assert_int_equal(ctr_root_need(ctr_driver_named("singularity")), ROOT_IMAGE_FILE);
	assert_int_equal(ctr_root_need(NULL), ROOT_IMAGE_FILE);
	assert_string_equal(ctr_runtime_name(NULL), "none");
}

static bool have_runc_and_crun(const char *bin, char *path, size_t size)
{
	if (strcmp(bin, "runc") != 0 && strcmp(bin, "crun") != 0)
		return false;
	snprintf(path, size, "/usr/bin/%s", bin);
	return true;
}

static bool have_runc(const char *bin, char *path, size_t size)
{
	return strcmp(bin, "runc") == 0 && have_runc_and_crun(bin, path, size);
}

static void test_crun_is_chosen_only_by_name(void **state)
{
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	for (enum image_kind k = IMAGE_SQUASHFS; k < IMAGE_KINDS; k++) {
		assert_int_equal(PICK("crun", k, "/i", have_runc_and_crun), 0);
		assert_string_equal(rt->name, "crun");
		assert_string_equal(bin, "/usr/bin/crun");
		assert_int_equal(PICK("auto", k, "/i", have_runc_and_crun), 0);
		assert_string_equal(rt->name, "oci");
		assert_string_equal(bin, "/usr/bin/runc");
	}
	assert_int_equal(PICK("crun", IMAGE_DIR, "/i", have_runc), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "--runtime crun: crun not found in PATH; install it, add its "
			    "directory to PATH or use --runtime auto");
	assert_null(rt);
}

/* ctrun __hold (start_fast): auto's oci is run by crun where crun is
 * installed, by runc where it is not; another kind's driver is untouched,
 * and a runtime asked for by name is that one. */
static void test_start_fast_takes_crun_for_oci(void **state)
{
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };
	struct ctr_pick q = { .want = NULL, .kind = IMAGE_DIR, .image = "/i",
			      .have = have_runc_and_crun, .start_fast = true };

	(void)state;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "crun");
	assert_string_equal(bin, "/usr/bin/crun");
	q.have = have_runc;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "oci");
	assert_string_equal(bin, "/usr/bin/runc");
	q.have = have_runc_and_crun;
	q.want = "oci";
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "oci");
	assert_string_equal(bin, "/usr/bin/runc");
}

static void test_unknown_runtime_lists_the_table(void **state)
{
	const struct ctr_driver *rt;
	char bin[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(PICK("docker", IMAGE_DIR, "/i", have_runc), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--runtime docker: unknown runtime (use auto, enroot, "
			    "apptainer, singularity, oci, crun or charliecloud)");
}

/* The binaries installed in /usr/bin for have_installed, NULL-ended. */
static const char *installed[4];

static bool have_installed(const char *bin, char *path, size_t size)
{
	for (const char **b = installed; *b != NULL; b++)
		if (strcmp(*b, bin) == 0)
			return snprintf(path, size, "/usr/bin/%s", bin) > 0;
	return false;
}

/* ctr_pick.adds stand-ins (for enroot's own, which reads the node's
 * configuration): what they were asked, and their answer. */
static int asked;
static char asked_bin[64];
static char *const the_env[] = { "ENV=the environment", NULL };

static bool enroot_adds_nothing(const struct ctr_driver *d, const char *bin, char *const *envp,
				char *why, size_t size)
{
	(void)envp;
	(void)why;
	(void)size;
	asked++;
	assert_string_equal(d->name, "enroot");
	snprintf(asked_bin, sizeof(asked_bin), "%s", bin);
	return false;
}

static bool enroot_adds_a_site_hook(const struct ctr_driver *d, const char *bin,
				    char *const *envp, char *why, size_t size)
{
	assert_ptr_equal(envp, the_env);
	enroot_adds_nothing(d, bin, NULL, why, size);
	snprintf(why, size, "/etc/enroot/hooks.d/50-site.sh is the site's");
	return true;
}

/* auto over a squashfs with enroot and runc installed: ctrun's own start
 * (oci, runc) where enroot's configuration adds nothing, enroot where it
 * does; -v's note says which and why. */
static void test_auto_takes_own_start_where_enroot_adds_nothing(void **state)
{
	const struct ctr_driver *rt;
	char bin[64], note[512];
	struct err e = { 0 };
	struct ctr_pick q = { .want = "auto", .kind = IMAGE_SQUASHFS, .image = "/i.sqsh",
			      .have = have_installed, .adds = enroot_adds_nothing,
			      .envp = the_env, .note = note, .note_size = sizeof(note) };

	(void)state;
	installed[0] = "enroot";
	installed[1] = "runc";
	installed[2] = NULL;
	asked = 0;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "oci");
	assert_string_equal(bin, "/usr/bin/runc");
	assert_int_equal(asked, 1);
	assert_string_equal(asked_bin, "/usr/bin/enroot");
	assert_string_equal(note, "--runtime auto: oci (/usr/bin/runc) for /i.sqsh, not enroot: "
			    "enroot's configuration here adds nothing to what ctrun's own start "
			    "gives a container, which is faster (--runtime enroot to use enroot)");

	q.adds = enroot_adds_a_site_hook;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "enroot");
	assert_string_equal(bin, "/usr/bin/enroot");
	assert_string_equal(note, "--runtime auto: enroot for /i.sqsh, not oci (/usr/bin/runc): "
			    "/etc/enroot/hooks.d/50-site.sh is the site's");
}

/* Where ctrun's own start is not installed or enroot is asked for by
 * name, enroot is taken as before, and a kind enroot does not run never
 * asks. */
static void test_enroot_where_own_start_is_no_choice(void **state)
{
	const struct ctr_driver *rt;
	char bin[64], note[512];
	struct err e = { 0 };
	struct ctr_pick q = { .want = "auto", .kind = IMAGE_SQUASHFS, .image = "/i.sqsh",
			      .have = have_installed, .adds = enroot_adds_nothing, .note = note,
			      .note_size = sizeof(note) };

	(void)state;
	installed[0] = "enroot";
	installed[1] = NULL;
	asked = 0;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "enroot");
	assert_string_equal(bin, "/usr/bin/enroot");
	assert_string_equal(note, "");
	installed[1] = "runc";
	installed[2] = NULL;
	q.want = "enroot";
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "enroot");
	q.want = "auto";
	q.kind = IMAGE_SIF;
	assert_int_equal(ctr_pick_runtime(&q, &rt, bin, sizeof(bin), &e), 0);
	assert_string_equal(rt->name, "oci");
	assert_int_equal(asked, 0);
}

static void spec_init(struct ctr_spec *s, const char *rt, const char *bin)
{
	static struct oci_own own[2];
	static int k;
	struct err e = { 0 };

	memset(s, 0, sizeof(*s));
	s->own = memset(&own[k++ % 2], 0, sizeof(own[0]));
	s->rt = ctr_driver_named(rt);
	s->bin = bin;
	s->id = "ctrun-7.0.0-n1-42-0000abcd";
	s->image = "/images/pytorch.sqsh";
	s->kind = IMAGE_SQUASHFS;
	s->rootfs = "/tmp/ctrun-cache-0/entries/squashfs-01";
	s->rundir = "/tmp/ctrun-0/run1";
	s->cwd = "/home/u/proj";
	s->agent = true;
	assert_int_equal(strv_push(&s->argv, "/.ctrun/agent"), 0);
	assert_int_equal(strv_push(&s->argv, "/.ctrun/spec"), 0);
	assert_int_equal(strv_push(&s->env, "PATH=/usr/bin:/bin"), 0);
	assert_int_equal(mounts_add(&s->mounts, "/tmp", "/tmp", false, false, &e), 0);
	assert_int_equal(mounts_add(&s->mounts, "/home/u/proj", "/home/u/proj", false, false, &e),
			 0);
}

static void spec_free(struct ctr_spec *s)
{
	strv_free(&s->argv);
	strv_free(&s->env);
	mounts_free(&s->mounts);
}

static void test_crun_plan_is_the_oci_plan_run_by_crun(void **state)
{
	struct ctr_spec runc, crun;
	struct ctr_plan pr = { 0 }, pc = { 0 };
	struct err e = { 0 };
	const char *argv[] = { "/usr/bin/crun", "--root", "/tmp/ctrun-0/run1/state", "run",
			       "--bundle", "/tmp/ctrun-0/run1", "ctrun-7.0.0-n1-42-0000abcd", NULL };

	(void)state;
	spec_init(&runc, "oci", "/usr/sbin/runc");
	spec_init(&crun, "crun", "/usr/bin/crun");
	assert_int_equal(runc.rt->plan(&runc, &pr, &e), 0);
	assert_int_equal(crun.rt->plan(&crun, &pc, &e), 0);
	assert_int_equal(pc.argv.n, 7);
	for (size_t i = 0; argv[i] != NULL; i++)
		assert_string_equal(pc.argv.v[i], argv[i]);
	/* Byte for byte the same files (config.json), overlay and agent notes. */
	assert_int_equal(pc.nfiles, 1);
	assert_int_equal(pr.nfiles, pc.nfiles);
	assert_string_equal(pc.files[0].path, "/tmp/ctrun-0/run1/config.json");
	assert_string_equal(pr.files[0].path, pc.files[0].path);
	assert_int_equal(pr.files[0].len, pc.files[0].len);
	assert_memory_equal(pr.files[0].data, pc.files[0].data, pc.files[0].len);
	assert_int_equal(pc.files[0].mode, 0644);
	assert_true(pc.ovl);
	assert_string_equal(pc.ovl_lower, "/tmp/ctrun-cache-0/entries/squashfs-01");
	assert_string_equal(pc.ovl_tmp, "/tmp/ctrun-0/run1/ovl");
	assert_string_equal(pc.ovl_merged, "/tmp/ctrun-0/run1/rootfs");
	assert_int_equal(pc.setenv.n, 0);
	assert_int_equal(pc.unsetenv.n, 0);
	assert_true(pc.agent_image_scripts);
	/* crun refuses a hybrid host's cgroup2 with controllers: hidden. */
	assert_true(pc.hide_cgroup2);
	assert_false(pr.hide_cgroup2);
	assert_int_equal(pc.gpus_renumbered, pr.gpus_renumbered);
	ctr_plan_free(&pr);
	ctr_plan_free(&pc);
	spec_free(&runc);
	spec_free(&crun);
}

/* auto's question goes to the driver that has one: enroot's own reads the
 * enroot script, and one it cannot read is taken to add (enroot is taken). */
static void test_auto_asks_the_drivers_own_question(void **state)
{
	const struct ctr_driver *enroot = ctr_driver_named("enroot");
	char why[256] = "";

	(void)state;
	assert_non_null(enroot->adds);
	assert_true(enroot->adds(enroot, "/nonexistent/enroot", the_env, why, sizeof(why)));
	assert_string_equal(why, "/nonexistent/enroot is not an enroot script ctrun can read its "
			    "configuration's place from");
	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++)
		assert_true((*d)->adds == NULL || (*d)->auto_own != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_order_per_kind_is_unchanged),
		cmocka_unit_test(test_every_driver_is_complete_and_named_once),
		cmocka_unit_test(test_auto_asks_the_drivers_own_question),
		cmocka_unit_test(test_every_kind_has_a_driver),
		cmocka_unit_test(test_root_need_comes_from_the_table),
		cmocka_unit_test(test_crun_is_chosen_only_by_name),
		cmocka_unit_test(test_start_fast_takes_crun_for_oci),
		cmocka_unit_test(test_unknown_runtime_lists_the_table),
		cmocka_unit_test(test_auto_takes_own_start_where_enroot_adds_nothing),
		cmocka_unit_test(test_enroot_where_own_start_is_no_choice),
		cmocka_unit_test(test_crun_plan_is_the_oci_plan_run_by_crun),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
