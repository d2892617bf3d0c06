/* Unit tests: enroot's root decision (rt/enroot/enrootroot.c, pure) for
 * every image kind x --image-mode x what its data directory has x whether
 * enroot can start the file here, against a table of rules that reads like
 * the documented behaviour; and --writable, which never uses the node's
 * shared container. */
#include "ctrtest.h"

#include "enroot/enroot.h"

#define ANY (-1)
enum want { DATA, FILE_START, FAILS_USAGE, FAILS_CTRUN };

/* One rule: the first that matches a case says what the decision gives
 * (squashfs: 1 a squashfs, 0 any other kind; can: enroot can start the
 * file here). */
struct rule {
	int squashfs, mode, cached, can;
	enum want want;
	bool why; /* -v says why it unpacks */
	unsigned hits;
};

static struct rule rules[] = {
	/* squashfs mode                cached can  want         why */
	{ ANY,     IMAGE_MODE_UNPACK,  ANY,   ANY, DATA,        false, 0 },
	{ 0,       IMAGE_MODE_MOUNT,   ANY,   ANY, FAILS_USAGE, false, 0 },
	{ 0,       IMAGE_MODE_AUTO,    ANY,   ANY, DATA,        false, 0 },
	{ 1,       IMAGE_MODE_AUTO,    1,     ANY, DATA,        false, 0 },
	{ 1,       IMAGE_MODE_MOUNT,   ANY,   0,   FAILS_CTRUN, false, 0 },
	{ 1,       IMAGE_MODE_AUTO,    ANY,   0,   DATA,        true,  0 },
	{ 1,       ANY,                ANY,   1,   FILE_START,  false, 0 },
};

static struct rule *rule_for(const struct enroot_root_facts *f)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++) {
		struct rule *r = &rules[i];

		if ((r->squashfs == ANY || r->squashfs == (f->kind == IMAGE_SQUASHFS)) &&
		    (r->mode == ANY || r->mode == (int)f->mode) &&
		    (r->cached == ANY || r->cached == f->cached) &&
		    (r->can == ANY || r->can == (f->no_file == NULL)))
			return r;
	}
	return NULL;
}

static void test_every_kind_mode_and_host_follows_the_rules(void **state)
{
	static const enum image_kind kinds[] = { IMAGE_UNKNOWN, IMAGE_SQUASHFS, IMAGE_SIF,
						 IMAGE_DOCKER_ARCHIVE, IMAGE_OCI_ARCHIVE };
	static const enum ctr_image_mode modes[] = { IMAGE_MODE_AUTO, IMAGE_MODE_MOUNT,
						     IMAGE_MODE_UNPACK };
	unsigned n = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++)
		for (size_t m = 0; m < 3; m++)
			for (unsigned bits = 0; bits < 4; bits++) {
				struct enroot_root_facts f = {
					.kind = kinds[k], .mode = modes[m], .cached = bits & 1,
					.no_file = (bits & 2) ? NULL : "no fuse-overlayfs",
					.image = "/scratch/img",
				};
				struct rule *r = rule_for(&f);
				struct enroot_root_choice c;
				struct err e = { 0 };
				int rv = enroot_root_decide(&f, &c, &e);

				if (r == NULL)
					fail_msg("no rule for kind %d mode %d", f.kind, f.mode);
				r->hits++;
				n++;
				if (r->want == FAILS_USAGE || r->want == FAILS_CTRUN) {
					if (rv != -1 || e.code != (r->want == FAILS_USAGE ? EXIT_USAGE
											 : EXIT_CTRUN) ||
					    strstr(e.msg, "--image-mode mount") == NULL)
						fail_msg("kind %d mode %d bits %u: want an error, got %d (%s)",
							 f.kind, f.mode, bits, rv, e.msg);
					continue;
				}
				if (rv != 0 || c.file != (r->want == FILE_START) ||
				    (c.why_unpacked != NULL) != r->why)
					fail_msg("kind %d mode %d bits %u: want %d why %d, got rv %d file %d "
						 "why %s (%s)", f.kind, f.mode, bits, r->want, r->why, rv,
						 c.file, c.why_unpacked ? c.why_unpacked : "-", e.msg);
			}
	assert_int_equal(n, 5 * 3 * 4);
	/* Every rule is the answer somewhere: none is dead. */
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++)
		if (rules[i].hits == 0)
			fail_msg("rule %zu never matched", i);
}

static void test_starts_a_squashfs_from_the_file_unless_created(void **state)
{
	struct enroot_root_facts f = { .kind = IMAGE_SQUASHFS, .image = "/s/x.sqsh" };
	struct enroot_root_choice c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(enroot_root_decide(&f, &c, &e), 0);
	assert_true(c.file);
	f.cached = true; /* its container is in the data directory already: faster */
	assert_int_equal(enroot_root_decide(&f, &c, &e), 0);
	assert_false(c.file);
	f.mode = IMAGE_MODE_MOUNT; /* asked for: the file, whatever is there */
	assert_int_equal(enroot_root_decide(&f, &c, &e), 0);
	assert_true(c.file);
}

/* --writable: enroot's shared container (created once per node) would
 * keep the run's writes for everyone: always the file, over a per-run tmpfs. */
static void test_writable_never_uses_the_shared_container(void **state)
{
	struct enroot_root_facts f = { .kind = IMAGE_SQUASHFS, .image = "/s/x.sqsh",
				       .writable = true, .cached = true };
	struct enroot_root_choice c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(enroot_root_decide(&f, &c, &e), 0);
	assert_true(c.file);
	f.mode = IMAGE_MODE_UNPACK;
	assert_int_equal(enroot_root_decide(&f, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--writable with --image-mode unpack"));
	f.mode = IMAGE_MODE_AUTO;
	f.no_file = "squashfuse is not installed";
	assert_int_equal(enroot_root_decide(&f, &c, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "--writable: enroot cannot start /s/x.sqsh over a per-run "
			    "layer: squashfuse is not installed");
	f.no_file = NULL;
	f.kind = IMAGE_SIF;
	assert_int_equal(enroot_root_decide(&f, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_mode_and_host_follows_the_rules),
		cmocka_unit_test(test_starts_a_squashfs_from_the_file_unless_created),
		cmocka_unit_test(test_writable_never_uses_the_shared_container),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
