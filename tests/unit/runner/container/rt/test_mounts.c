/* Unit tests: --mount parsing and validation, and mount destinations
 * resolved and created inside an image root (a real directory with
 * hostile symlinks: evil -> /etc, evil-rel -> ../../../etc, a loop), so
 * that nothing is ever resolved or created outside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mounts.h"
#include "rootpath.h"

static void parse_ok(const char *spec, const char *src, const char *dst, bool ro)
{
	struct ctr_mount m;
	struct err e = { 0 };

	if (mount_parse(spec, "/home/u/proj", &m, &e) < 0)
		fail_msg("mount_parse(%s): %s", spec, e.msg);
	assert_string_equal(m.src, src);
	assert_string_equal(m.dst, dst);
	assert_int_equal(m.ro, ro);
	mount_free(&m);
}

static void parse_bad(const char *spec, const char *words)
{
	struct ctr_mount m;
	struct err e = { 0 };

	assert_int_equal(mount_parse(spec, "/home/u/proj", &m, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (strstr(e.msg, words) == NULL)
		fail_msg("mount_parse(%s): '%s' does not say '%s'", spec, e.msg, words);
}

static void test_parse_forms(void **state)
{
	(void)state;
	parse_ok("/data", "/data", "/data", false);
	parse_ok("/data:/in", "/data", "/in", false);
	parse_ok("/data:/in:ro", "/data", "/in", true);
	parse_ok("/data:/in:rw", "/data", "/in", false);
	parse_ok("data", "/home/u/proj/data", "/home/u/proj/data", false);
	parse_ok("../x/./y//:/a/../b/", "/home/u/x/y", "/b", false);
	parse_ok("/a b/$HOME 'q\":/in side", "/a b/$HOME 'q\"", "/in side", false);
}

static void test_parse_suid_and_dev_options(void **state)
{
	struct ctr_mount m;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(mount_parse("/data:/in:ro,suid", "/", &m, &e), 0);
	assert_true(m.ro && m.suid && !m.dev);
	mount_free(&m);
	assert_int_equal(mount_parse("/data:/in:dev", "/", &m, &e), 0);
	assert_true(!m.ro && !m.suid && m.dev);
	mount_free(&m);
	/* Neither by default: binds are nosuid,nodev unless asked. */
	assert_int_equal(mount_parse("/data:/in:rw", "/", &m, &e), 0);
	assert_true(!m.suid && !m.dev && !m.unbindable);
	mount_free(&m);
	assert_int_equal(mount_parse("/data:/in:ro,unbindable", "/", &m, &e), 0);
	assert_true(m.ro && m.unbindable && !m.suid && !m.dev);
	mount_free(&m);
	parse_bad("/data:/in:unbindable,unbindable", "unknown option");
	parse_bad("/data:/in:ro,rw", "unknown option");
	parse_bad("/data:/in:suid,suid", "unknown option");
	parse_bad("/data:/in:ro,", "unknown option");
	parse_bad("/data:/in:nosuid", "unknown option");
}

/* pyxis's tmpfs:DST[:OPTS]: a tmpfs, its options checked word by word. */
static void tmpfs_ok(const char *spec, const char *dst, const char *data, bool ro)
{
	struct ctr_mount m;
	struct err e = { 0 };

	if (mount_parse(spec, "/home/u/proj", &m, &e) < 0)
		fail_msg("mount_parse(%s): %s", spec, e.msg);
	assert_int_equal(m.kind, CTR_MOUNT_TMPFS);
	assert_string_equal(m.dst, dst);
	assert_non_null(m.data);
	assert_string_equal(m.data, data);
	assert_int_equal(m.ro, ro);
	mount_free(&m);
}

static void test_parse_tmpfs(void **state)
{
	(void)state;
	tmpfs_ok("tmpfs:/mytmpfs", "/mytmpfs", "", false);
	tmpfs_ok("tmpfs:/a/../t/:huge=within_size", "/t", "huge=within_size", false);
	tmpfs_ok("tmpfs:/t:ro,size=64m,mode=1777,nr_inodes=1k", "/t", "size=64m,mode=1777,nr_inodes=1k",
		 true);
	tmpfs_ok("tmpfs:/t:size=50%", "/t", "size=50%", false);
	/* No other mount option rides along, nor a value it does not know. */
	parse_bad("tmpfs:/t:size=1g,uid=0", "bad tmpfs option");
	parse_bad("tmpfs:/t:size=1g,,mode=1", "bad tmpfs option");
	parse_bad("tmpfs:/t:size=1g,size=2g", "bad tmpfs option");
	parse_bad("tmpfs:/t:size=1g\\,exec", "bad tmpfs option");
	parse_bad("tmpfs:/t:size=", "bad tmpfs option");
	parse_bad("tmpfs:/t:size=1q", "bad tmpfs option");
	parse_bad("tmpfs:/t:mode=0888", "bad tmpfs option");
	parse_bad("tmpfs:/t:mode=17777", "bad tmpfs option");
	parse_bad("tmpfs:/t:huge=yes", "bad tmpfs option");
	parse_bad("tmpfs:/t:ro,rw", "bad tmpfs option");
	parse_bad("tmpfs:/t:suid", "bad tmpfs option");
	parse_bad("tmpfs:/t:", "bad tmpfs option");
	/* The destination: absolute, not the root; no host path involved. */
	parse_bad("tmpfs", "needs an absolute destination");
	parse_bad("tmpfs:t", "needs an absolute destination");
	parse_bad("tmpfs:/..", "container's /");
	/* A directory of that name is ./tmpfs. */
	parse_ok("./tmpfs:/t", "/home/u/proj/tmpfs", "/t", false);
}

static void test_parse_umount(void **state)
{
	struct ctr_mount m;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(mount_parse("umount:/root/", "/", &m, &e), 0);
	assert_int_equal(m.kind, CTR_MOUNT_UMOUNT);
	assert_string_equal(m.dst, "/root");
	assert_null(m.data);
	mount_free(&m);
	parse_bad("umount:/root:ro", "umount takes no options");
	parse_bad("umount", "needs an absolute destination");
	parse_bad("umount:/", "container's /");
	parse_ok("./umount", "/home/u/proj/umount", "/home/u/proj/umount", false);
}

static void add_spec(struct ctr_mounts *ms, const char *spec)
{
	struct ctr_mount m;
	struct err e = { 0 };

	if (mount_parse(spec, "/", &m, &e) < 0 || mounts_add_copy(ms, &m, &e) < 0)
		fail_msg("%s: %s", spec, e.msg);
	mount_free(&m);
}

/* umount:DST drops the mounts before it at DST and below, not after it. */
static void test_umount_removes_earlier_mounts_at_and_below(void **state)
{
	struct ctr_mounts ms = { 0 };
	struct err e = { 0 };

	(void)state;
	add_spec(&ms, "/home/u:/home/u");
	add_spec(&ms, "/data:/home/u/data");
	add_spec(&ms, "/data:/home/user2");
	add_spec(&ms, "tmpfs:/scratch:size=1m");
	add_spec(&ms, "umount:/home/u");
	add_spec(&ms, "/data:/home/u");
	add_spec(&ms, "umount:/scratch");
	assert_int_equal(mounts_apply_umounts(&ms, false, "runc", &e), 0);
	assert_int_equal(ms.n, 2);
	assert_string_equal(ms.v[0].dst, "/home/user2");
	assert_string_equal(ms.v[1].dst, "/home/u");
	assert_string_equal(ms.v[1].src, "/data");
	assert_int_equal(ms.v[1].kind, CTR_MOUNT_BIND);
	mounts_free(&ms);
}

/* One that finds nothing: refused, unless the runtime detaches its own. */
static void test_umount_of_nothing(void **state)
{
	struct ctr_mounts ms = { 0 };
	struct err e = { 0 };

	(void)state;
	add_spec(&ms, "umount:/home/u");
	add_spec(&ms, "/data:/home/u");
	assert_int_equal(mounts_apply_umounts(&ms, false, "crun", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "umount:/home/u: ctrun mounts nothing at /home/u"));
	assert_non_null(strstr(e.msg, "crun"));
	assert_int_equal(mounts_apply_umounts(&ms, true, "enroot", &e), 0);
	assert_int_equal(ms.n, 2);
	assert_int_equal(ms.v[0].kind, CTR_MOUNT_UMOUNT);
	assert_int_equal(ms.v[1].kind, CTR_MOUNT_BIND);
	mounts_free(&ms);
}

static void test_parse_escaped_colons_and_backslashes(void **state)
{
	(void)state;
	parse_ok("/data/x\\:y:/in\\:2:ro", "/data/x:y", "/in:2", true);
	parse_ok("/back\\\\slash", "/back\\slash", "/back\\slash", false);
	parse_ok("/other\\escape", "/other\\escape", "/other\\escape", false);
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_bad("", "empty source");
	parse_bad(":/in", "empty source");
	parse_bad("/data:", "empty destination");
	parse_bad("/data::ro", "empty destination");
	parse_bad("/data:in", "must be an absolute path");
	parse_bad("/data:/in:rx", "unknown option");
	parse_bad("/data:/in:ro:extra", "unknown option");
	parse_bad("/data:/", "over the container's /");
	parse_bad("/data:/..", "over the container's /");
}

static void test_normalize(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(rootpath_normalize("//a/./b/../c//", out, sizeof(out)), 0);
	assert_string_equal(out, "/a/c");
	assert_int_equal(rootpath_normalize("/../../x", out, sizeof(out)), 0);
	assert_string_equal(out, "/x");
	assert_int_equal(rootpath_normalize("/", out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	assert_int_equal(rootpath_normalize("rel", out, sizeof(out)), -1);
	assert_int_equal(rootpath_normalize("/aaaaaaaaaa", out, 8), -1);
}

static void test_source_must_exist(void **state)
{
	struct ctr_mount m;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(mount_parse("/proc/self/no-such-thing", "/", &m, &e), 0);
	assert_int_equal(mount_check_source(&m, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "/proc/self/no-such-thing"));
	mount_free(&m);
	assert_int_equal(mount_parse("/etc/hostname:/h", "/", &m, &e), 0);
	if (access("/etc/hostname", F_OK) == 0) {
		assert_int_equal(mount_check_source(&m, &e), 0);
		assert_true(m.file);
	}
	mount_free(&m);
}

/* A fake image: /etc, /mnt/evil -> /etc, /mnt/evil-rel -> ../../../../etc,
 * /mnt/loop -> loop, /lib -> usr/lib. */
struct root {
	char dir[64];
};

static int root_setup(void **state)
{
	struct root *r = calloc(1, sizeof(*r));
	char p[256];

	strcpy(r->dir, "/tmp/ctrun-mounts-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	for (const char *const *d = (const char *const[]){ "etc", "mnt", "usr", "usr/lib", NULL };
	     *d; d++) {
		snprintf(p, sizeof(p), "%s/%s", r->dir, *d);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/mnt/evil", r->dir);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/mnt/evil-rel", r->dir);
	assert_int_equal(symlink("../../../../etc", p), 0);
	snprintf(p, sizeof(p), "%s/mnt/loop", r->dir);
	assert_int_equal(symlink("loop", p), 0);
	snprintf(p, sizeof(p), "%s/lib", r->dir);
	assert_int_equal(symlink("usr/lib", p), 0);
	snprintf(p, sizeof(p), "%s/up", r->dir);
	assert_int_equal(symlink("..", p), 0);
	*state = r;
	return 0;
}

static int root_teardown(void **state)
{
	struct root *r = *state;

	remove_tree(r->dir);
	free(r);
	return 0;
}

static void resolve(struct root *r, const char *dst, const char *want)
{
	struct ctr_mount m = { .src = strdup("/data"), .dst = strdup(dst) };
	struct err e = { 0 };

	if (mount_resolve_dest(r->dir, &m, &e) < 0)
		fail_msg("resolve %s: %s", dst, e.msg);
	assert_string_equal(m.dst, want);
	mount_free(&m);
}

static void test_symlinks_resolve_inside_the_image(void **state)
{
	struct root *r = *state;

	resolve(r, "/data", "/data");
	resolve(r, "/mnt/evil", "/etc");
	resolve(r, "/mnt/evil/ctrun-test", "/etc/ctrun-test");
	resolve(r, "/mnt/evil-rel/x/y", "/etc/x/y");
	resolve(r, "/lib/python3", "/usr/lib/python3");
	resolve(r, "/up/up/etc", "/etc");
}

static void test_destination_that_is_the_root_or_a_loop_is_refused(void **state)
{
	struct root *r = *state;
	struct ctr_mount m = { .src = strdup("/data"), .dst = strdup("/up") };
	struct err e = { 0 };

	assert_int_equal(mount_resolve_dest(r->dir, &m, &e), -1);
	assert_non_null(strstr(e.msg, "image's root"));
	mount_free(&m);
	m = (struct ctr_mount){ .src = strdup("/data"), .dst = strdup("/mnt/loop/x") };
	assert_int_equal(mount_resolve_dest(r->dir, &m, &e), -1);
	assert_non_null(strstr(e.msg, "/mnt/loop/x"));
	mount_free(&m);
}

static void test_mount_points_are_created_inside_only(void **state)
{
	struct root *r = *state;
	struct ctr_mount m = { .src = strdup("/data"), .dst = strdup("/mnt/evil/ctrun-test-mp") };
	struct err e = { 0 };
	char p[256];
	struct stat st;
	int fd = open(r->dir, O_PATH | O_DIRECTORY);

	assert_true(fd >= 0);
	assert_int_equal(mount_resolve_dest(r->dir, &m, &e), 0);
	assert_int_equal(mount_point_create(fd, &m, &e), 0);
	snprintf(p, sizeof(p), "%s/etc/ctrun-test-mp", r->dir);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(access("/etc/ctrun-test-mp", F_OK), -1);
	mount_free(&m);
	/* A file mount point, under new directories. */
	m = (struct ctr_mount){ .src = strdup("/etc/hosts"), .dst = strdup("/a/b/hosts"),
				.file = true };
	assert_int_equal(mount_point_create(fd, &m, &e), 0);
	snprintf(p, sizeof(p), "%s/a/b/hosts", r->dir);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	mount_free(&m);
	close(fd);
}

static void test_creation_never_follows_a_symlink(void **state)
{
	struct root *r = *state;
	/* Not resolved first (or swapped after resolving): the walk refuses the link. */
	struct ctr_mount m = { .src = strdup("/data"), .dst = strdup("/mnt/evil/ctrun-test-bad") };
	struct err e = { 0 };
	int fd = open(r->dir, O_PATH | O_DIRECTORY);

	assert_true(fd >= 0);
	assert_int_equal(mount_point_create(fd, &m, &e), -1);
	assert_int_equal(access("/etc/ctrun-test-bad", F_OK), -1);
	mount_free(&m);
	m = (struct ctr_mount){ .src = strdup("/etc/hosts"), .dst = strdup("/mnt/evil"),
				.file = true };
	assert_int_equal(mount_point_create(fd, &m, &e), -1);
	mount_free(&m);
	close(fd);
}

/* A mount inside an earlier directory bind whose source holds it needs no
 * mount point in the image (the runtime mounts it inside the bind). */
static void test_mount_inside_an_earlier_bind_is_provided(void **state)
{
	char dir[] = "/tmp/ctrun-test-provided-XXXXXX", sub[64], file[64];
	struct ctr_mount v[5];
	struct ctr_mounts ms = { v, 5 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/work", dir);
	snprintf(file, sizeof(file), "%s/f", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(close(open(file, O_CREAT | O_WRONLY, 0644)), 0);
	v[0] = (struct ctr_mount){ .src = "/tmp", .dst = "/tmp" };
	v[1] = (struct ctr_mount){ .src = sub, .dst = sub };             /* under /tmp, exists */
	v[2] = (struct ctr_mount){ .src = "/etc", .dst = "/data" };      /* not inside a bind */
	v[3] = (struct ctr_mount){ .src = "/etc", .dst = "/tmpx/a" };    /* /tmp is no prefix */
	v[4] = (struct ctr_mount){ .src = "/etc/hostname", .dst = file, .file = true };
	assert_false(mount_point_provided(&ms, 0));
	assert_true(mount_point_provided(&ms, 1));
	assert_false(mount_point_provided(&ms, 2));
	assert_false(mount_point_provided(&ms, 3));
	assert_true(mount_point_provided(&ms, 4));
	v[1].dst = "/tmp/ctrun-test-provided-missing/x";                  /* not in the source */
	assert_false(mount_point_provided(&ms, 1));
	v[4].file = false;                                               /* a file, not a dir */
	assert_false(mount_point_provided(&ms, 4));
	unlink(file);
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_forms),
		cmocka_unit_test(test_parse_escaped_colons_and_backslashes),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_suid_and_dev_options),
		cmocka_unit_test(test_parse_tmpfs),
		cmocka_unit_test(test_parse_umount),
		cmocka_unit_test(test_umount_removes_earlier_mounts_at_and_below),
		cmocka_unit_test(test_umount_of_nothing),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_source_must_exist),
		cmocka_unit_test(test_mount_inside_an_earlier_bind_is_provided),
		cmocka_unit_test_setup_teardown(test_symlinks_resolve_inside_the_image, root_setup,
						root_teardown),
		cmocka_unit_test_setup_teardown(test_destination_that_is_the_root_or_a_loop_is_refused,
						root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_mount_points_are_created_inside_only, root_setup,
						root_teardown),
		cmocka_unit_test_setup_teardown(test_creation_never_follows_a_symlink, root_setup,
						root_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
