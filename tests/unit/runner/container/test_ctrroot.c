/* Unit tests: the root file system decision (runner/container/ctrroot.c)
 * for every runtime need x image kind x --image-mode x user x dry run x
 * task mode x what the cache has x what the host can mount, against a
 * table of rules that reads like the documented behaviour; and the spec a
 * result gives the adapters.  A driver's own root (ROOT_DRIVER) is its
 * own decision: enroot's, rt/test_enroot_root.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctrroot.h"

#define ANY (-1)
/* Image kinds as the decision groups them. */
enum kclass { K_DIR, K_SQUASHFS, K_SIF, K_ARCHIVE };

/* One rule: the first that matches a case says what the decision gives.
 * can: the host can start the image unpacked for this user (a kernel
 * mount as root, squashfuse_ll as a user). */
struct rule {
	int need, kclass, mode, cached, can;
	enum ctr_root_kind want;
	int exit_code; /* 0, or the error's exit code */
	bool why;      /* -v says why it unpacks */
	unsigned hits;
};

static struct rule rules[] = {
	/* need        kind            mode                cached can want                 exit why */
	{ ANY,         K_DIR,          ANY,                ANY, ANY, ROOTFS_DIR,         0, false, 0 },
	{ ROOT_IMAGE_FILE, ANY,        ANY,                ANY, ANY, ROOTFS_NONE,        0, false, 0 },
	{ ROOT_TREE,   ANY,            IMAGE_MODE_UNPACK,  ANY, ANY, ROOTFS_CACHE,       0, false, 0 },
	{ ROOT_TREE,   ANY,            IMAGE_MODE_AUTO,    1,   ANY, ROOTFS_CACHE,       0, false, 0 },
	{ ROOT_TREE,   K_ARCHIVE,      IMAGE_MODE_MOUNT,   ANY, ANY, ROOTFS_NONE, EXIT_CTRUN, false, 0 },
	{ ROOT_TREE,   ANY,            IMAGE_MODE_MOUNT,   ANY, 0,   ROOTFS_NONE, EXIT_CTRUN, false, 0 },
	{ ROOT_TREE,   K_ARCHIVE,      IMAGE_MODE_AUTO,    ANY, ANY, ROOTFS_CACHE,       0, false, 0 },
	{ ROOT_TREE,   ANY,            IMAGE_MODE_AUTO,    ANY, 0,   ROOTFS_CACHE,       0, true,  0 },
	{ ROOT_TREE,   ANY,            ANY,                ANY, 1,   ROOTFS_HOLDER,      0, false, 0 },
};

static enum kclass kclass_of(enum image_kind k)
{
	switch (k) {
	case IMAGE_DIR:
		return K_DIR;
	case IMAGE_SQUASHFS:
		return K_SQUASHFS;
	case IMAGE_SIF:
		return K_SIF;
	default:
		return K_ARCHIVE;
	}
}

static bool matches(int want, int have)
{
	return want == ANY || want == have;
}

static struct rule *rule_for(const struct ctr_root_facts *f, bool can)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++) {
		struct rule *r = &rules[i];

		if ((r->need == ANY || r->need == (int)f->need) &&
		    matches(r->kclass, kclass_of(f->kind)) && (r->mode == ANY || r->mode == (int)f->mode) &&
		    (r->cached == ANY || r->cached == f->cached) && (r->can == ANY || r->can == can))
			return r;
	}
	return NULL;
}

/* The host facts of one case: each "cannot" names a reason. */
static void host(struct ctr_root_facts *f, unsigned bits)
{
	f->no_kernel_mount = (bits & 1) ? NULL : "no loop devices";
	f->no_fuse_mount = (bits & 2) ? NULL : "no squashfuse_ll";
}

static bool host_can(const struct ctr_root_facts *f)
{
	return (f->root ? f->no_kernel_mount : f->no_fuse_mount) == NULL;
}

static void check_case(const struct ctr_root_facts *f, unsigned *n)
{
	struct rule *r = rule_for(f, host_can(f));
	struct ctr_root_choice c;
	struct err e = { 0 };
	int rv = ctr_root_decide(f, &c, &e);

	if (r == NULL)
		fail_msg("no rule for need %d kind %d mode %d", f->need, f->kind, f->mode);
	r->hits++;
	(*n)++;
	if (r->exit_code != 0) {
		if (rv != -1 || e.code != r->exit_code || strstr(e.msg, "--image-mode mount") == NULL)
			fail_msg("need %d kind %d mode %d root %d: want error %d, got %d (%s)", f->need,
				 f->kind, f->mode, f->root, r->exit_code, rv, e.msg);
		return;
	}
	if (rv != 0 || c.kind != r->want || (c.why_unpacked != NULL) != r->why ||
	    c.placeholder != (f->dry_run && (c.kind == ROOTFS_CACHE || c.kind == ROOTFS_HOLDER)) ||
	    c.share != (c.kind == ROOTFS_HOLDER && f->task_share))
		fail_msg("need %d kind %d mode %d root %d dry %d cached %d: want %d why %d, got rv %d "
			 "kind %d why %s placeholder %d share %d (%s)", f->need, f->kind, f->mode, f->root,
			 f->dry_run, f->cached, r->want, r->why, rv, c.kind,
			 c.why_unpacked ? c.why_unpacked : "-", c.placeholder, c.share, e.msg);
}

static void test_every_need_kind_mode_and_user_follows_the_rules(void **state)
{
	static const enum ctr_root_need needs[] = { ROOT_IMAGE_FILE, ROOT_TREE };
	static const enum image_kind kinds[] = { IMAGE_UNKNOWN, IMAGE_SQUASHFS, IMAGE_SIF,
						 IMAGE_DOCKER_ARCHIVE, IMAGE_OCI_ARCHIVE, IMAGE_DIR };
	static const enum ctr_image_mode modes[] = { IMAGE_MODE_AUTO, IMAGE_MODE_MOUNT,
						     IMAGE_MODE_UNPACK };
	unsigned n = 0;

	(void)state;
	for (size_t a = 0; a < 2; a++)
		for (size_t b = 0; b < sizeof(kinds) / sizeof(*kinds); b++)
			for (size_t m = 0; m < 3; m++)
				for (unsigned bits = 0; bits < 16; bits++)
					for (unsigned hostbits = 0; hostbits < 4; hostbits++) {
						struct ctr_root_facts f = {
							.need = needs[a], .kind = kinds[b], .mode = modes[m],
							.root = bits & 1, .dry_run = bits & 2,
							.task_share = bits & 4, .cached = bits & 8,
							.image = "/scratch/img",
						};

						host(&f, hostbits);
						check_case(&f, &n);
					}
	assert_int_equal(n, 2 * 6 * 3 * 16 * 4);
	/* Every rule is the answer somewhere: none is dead. */
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++)
		if (rules[i].hits == 0)
			fail_msg("rule %zu never matched", i);
}

static void test_user_without_squashfuse_unpacks_and_says_why(void **state)
{
	struct ctr_root_facts f = { .need = ROOT_TREE, .kind = IMAGE_SQUASHFS, .root = false,
				    .no_fuse_mount = "squashfuse_ll is not installed",
				    .image = "/scratch/img.sqsh" };
	struct ctr_root_choice c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_root_decide(&f, &c, &e), 0);
	assert_int_equal(c.kind, ROOTFS_CACHE);
	assert_string_equal(c.why_unpacked, "squashfuse_ll is not installed");
	/* Root mounts with the kernel: squashfuse_ll does not matter. */
	f.root = true;
	assert_int_equal(ctr_root_decide(&f, &c, &e), 0);
	assert_int_equal(c.kind, ROOTFS_HOLDER);
}

/* A user's named container (--name) runs over the unpacked image: its
 * root may serve other runs after the one that would have mounted it
 * (runner/container/namedroot.h), and a squashfuse_ll ends with its run. */
static void test_a_users_named_container_is_unpacked(void **state)
{
	struct ctr_root_facts f = { .need = ROOT_TREE, .kind = IMAGE_SQUASHFS, .root = false,
				    .named = true, .image = "/scratch/img.sqsh" };
	struct ctr_root_choice c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_root_decide(&f, &c, &e), 0);
	assert_int_equal(c.kind, ROOTFS_CACHE);
	assert_non_null(c.why_unpacked);
	assert_non_null(strstr(c.why_unpacked, "named container"));
	f.mode = IMAGE_MODE_MOUNT;
	assert_int_equal(ctr_root_decide(&f, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--image-mode mount --name: "));
	/* Root's kernel mount needs no process: mounted as before. */
	f.root = true;
	f.mode = IMAGE_MODE_AUTO;
	assert_int_equal(ctr_root_decide(&f, &c, &e), 0);
	assert_int_equal(c.kind, ROOTFS_HOLDER);
	/* Without --name, a user's image is mounted. */
	f.root = false;
	f.named = false;
	assert_int_equal(ctr_root_decide(&f, &c, &e), 0);
	assert_int_equal(c.kind, ROOTFS_HOLDER);
}

static void test_image_mode_mount_of_an_archive_names_the_image(void **state)
{
	struct ctr_root_facts f = { .need = ROOT_TREE, .kind = IMAGE_DOCKER_ARCHIVE,
				    .mode = IMAGE_MODE_MOUNT, .root = true, .image = "/s/x.tar" };
	struct ctr_root_choice c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ctr_root_decide(&f, &c, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "--image-mode mount: /s/x.tar: only a squashfs or a SIF can "
			    "be mounted");
}

static void test_holder_result_gives_the_spec_its_namespaces(void **state)
{
	struct ctr_root r;
	struct ctr_spec s = { 0 };

	(void)state;
	ctr_root_init(&r);
	r.kind = ROOTFS_HOLDER;
	r.real = true;
	strcpy(r.path, "/proc/self/fd/7");
	strcpy(r.path_ns, "/run/x/image");
	r.holder.mnt = 8;
	r.holder.user = 9;
	ctr_root_spec(&r, &s);
	assert_string_equal(s.rootfs, "/proc/self/fd/7");
	assert_string_equal(s.rootfs_ns, "/run/x/image");
	assert_true(s.holder);
	assert_int_equal(s.holder_mnt, 8);
	assert_int_equal(s.holder_user, 9);
	assert_string_equal(ctr_rootfs_dir(&s), "/proc/self/fd/7");
}

/* --dry-run's placeholder names what a run would make: nothing to read. */
static void test_placeholder_is_no_directory(void **state)
{
	struct ctr_root r;
	struct ctr_spec s = { 0 };

	(void)state;
	ctr_root_init(&r);
	r.kind = ROOTFS_PLACEHOLDER;
	strcpy(r.path, "</c: node cache entry of /s/x.tar>");
	ctr_root_spec(&r, &s);
	assert_string_equal(s.rootfs, "</c: node cache entry of /s/x.tar>");
	assert_null(ctr_rootfs_dir(&s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_need_kind_mode_and_user_follows_the_rules),
		cmocka_unit_test(test_user_without_squashfuse_unpacks_and_says_why),
		cmocka_unit_test(test_image_mode_mount_of_an_archive_names_the_image),
		cmocka_unit_test(test_a_users_named_container_is_unpacked),
		cmocka_unit_test(test_holder_result_gives_the_spec_its_namespaces),
		cmocka_unit_test(test_placeholder_is_no_directory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
