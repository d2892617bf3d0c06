/* Unit tests: resolving destinations inside an image never leaves it.
 * Each test builds a small image tree with the symlinks a hostile image
 * would carry and checks the walk (no mounts: that needs privileges and
 * is covered by tests/integration/t_hook_hostile.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "state.h"
#include "rootfs.h"
#include "plan.h"

static char root[64], host[96];

static void mk(const char *rel, bool dir)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (dir)
		assert_int_equal(mkdir(p, 0755), 0);
	else
		close(open(p, O_CREAT | O_WRONLY, 0644));
}

static void ln(const char *target, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	char t[128];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/ctrun-test-root.XXXXXX");
	assert_non_null(mkdtemp(root));
	/* The host directory a naive hook would write into. */
	snprintf(host, sizeof(host), "%s-host", root);
	assert_int_equal(mkdir(host, 0755), 0);
	mk("usr", true);
	mk("usr/lib", true);
	mk("usr/lib/x86_64-linux-gnu", true);
	mk("etc", true);
	mk("file", false);
	ln("lib", "usr/lib64");                  /* Arch: stays inside */
	ln(host, "dev");                         /* absolute: to the host */
	ln("/etc", "usr/lib/x86_64-linux-gnu2"); /* absolute, even if "inside" */
	ln("../../../../../etc", "lib");         /* relative escape */
	ln("b", "a");
	ln("a", "b");
	snprintf(t, sizeof(t), "%s/usr/lib/x86_64-linux-gnu/libcuda.so.1", root);
	assert_int_equal(symlink("/etc/shadow", t), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, host);
	return system(cmd) == 0 ? 0 : -1;
}

static int walk(const char *dst, bool create, char *msg, size_t size, ino_t *ino)
{
	struct hook_root r;
	struct err e = { 0 };
	char leaf[256];
	struct stat st;
	int dfd, ret;

	assert_int_equal(hook_root_open(root, &r, &e), 0);
	ret = hook_root_parent(&r, dst, create, &dfd, leaf, sizeof(leaf), &e);
	snprintf(msg, size, "%s", e.msg);
	if (ret == 0) {
		assert_int_equal(fstat(dfd, &st), 0);
		*ino = st.st_ino;
		close(dfd);
	}
	hook_root_close(&r);
	return ret;
}

static ino_t ino_of(const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_ino;
}

static void test_relative_symlink_inside_is_followed(void **state)
{
	char msg[1024];
	ino_t ino = 0;

	(void)state;
	assert_int_equal(walk("/usr/lib64/libcuda.so.1", false, msg, sizeof(msg), &ino), 0);
	assert_int_equal(ino, ino_of("usr/lib"));
	assert_int_equal(walk("/usr/./lib/../lib/x86_64-linux-gnu/x", false, msg, sizeof(msg), &ino),
			 0);
	assert_int_equal(ino, ino_of("usr/lib/x86_64-linux-gnu"));
}

static void test_absolute_symlink_to_host_is_refused(void **state)
{
	char msg[1024];
	ino_t ino;

	(void)state;
	assert_int_equal(walk("/dev/nvidia0", true, msg, sizeof(msg), &ino), -1);
	assert_non_null(strstr(msg, "/dev in the image is a symlink to the absolute path"));
	assert_int_equal(walk("/usr/lib/x86_64-linux-gnu2/libcuda.so", true, msg, sizeof(msg), &ino),
			 -1);
	assert_non_null(strstr(msg, "symlink to the absolute path /etc"));
}

static void test_relative_escape_is_refused(void **state)
{
	char msg[1024];
	ino_t ino;

	(void)state;
	assert_int_equal(walk("/lib/x", true, msg, sizeof(msg), &ino), -1);
	assert_non_null(strstr(msg, "symlink /lib -> ../../../../../etc climbs out"));
	assert_int_equal(walk("/../../etc/x", true, msg, sizeof(msg), &ino), -1);
	assert_non_null(strstr(msg, "would leave the container root"));
}

static void test_loops_and_files_in_the_path_are_refused(void **state)
{
	char msg[1024];
	ino_t ino;

	(void)state;
	assert_int_equal(walk("/a/x", true, msg, sizeof(msg), &ino), -1);
	assert_non_null(strstr(msg, "too many levels"));
	assert_int_equal(walk("/file/x", true, msg, sizeof(msg), &ino), -1);
	assert_non_null(strstr(msg, "not a directory"));
}

static void test_missing_directories_are_reported_or_created(void **state)
{
	char msg[1024], p[256];
	struct stat st;
	ino_t ino;

	(void)state;
	assert_int_equal(walk("/opt/nv/lib/x", false, msg, sizeof(msg), &ino), 1);
	snprintf(p, sizeof(p), "%s/opt", root);
	assert_int_equal(lstat(p, &st), -1);
	assert_int_equal(walk("/opt/nv/lib/x", true, msg, sizeof(msg), &ino), 0);
	assert_int_equal(ino, ino_of("opt/nv/lib"));
}

static void test_plan_check_refuses_symlinked_destinations(void **state)
{
	struct hook_plan p = { 0 };
	struct hook_root r;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_root_open(root, &r, &e), 0);
	/* a bind onto libcuda.so.1 -> /etc/shadow would land on the host */
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_FILE, "/etc/hostname",
				       "/usr/lib/x86_64-linux-gnu/libcuda.so.1", &e), 0);
	assert_int_equal(hook_plan_check(&p, &r, &e), -1);
	assert_non_null(strstr(e.msg, "is a symlink, not a place for the host's file"));
	hook_plan_free(&p);
	/* the same name as a link to make is fine: it is replaced */
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_LINK, "libcuda.so.535",
				       "/usr/lib/x86_64-linux-gnu/libcuda.so.1", &e), 0);
	assert_int_equal(hook_plan_check(&p, &r, &e), 0);
	hook_plan_free(&p);
	/* a device through /dev -> host */
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_DEV, "/dev/null", "/dev/nvidia0", &e), 0);
	assert_int_equal(hook_plan_check(&p, &r, &e), -1);
	assert_non_null(strstr(e.msg, "device /dev/nvidia0: /dev in the image is a symlink"));
	hook_plan_free(&p);
	hook_root_close(&r);
}

static void test_plan_add_checks_the_host_side(void **state)
{
	struct hook_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_DEV, "/etc/hostname", "/dev/x", &e), -1);
	assert_non_null(strstr(e.msg, "wrong file type"));
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_FILE, "/nonexistent", "/x", &e), -1);
	assert_int_equal(hook_plan_add(&p, HOOK_ITEM_FILE, "/etc/hostname", "/a b", &e), -1);
	assert_int_equal(p.n, 0);
	hook_plan_free(&p);
}

static void test_root_may_not_be_the_host_root(void **state)
{
	struct hook_root r;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_root_open("/", &r, &e), -1);
	assert_non_null(strstr(e.msg, "host's /"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relative_symlink_inside_is_followed),
		cmocka_unit_test(test_absolute_symlink_to_host_is_refused),
		cmocka_unit_test(test_relative_escape_is_refused),
		cmocka_unit_test(test_loops_and_files_in_the_path_are_refused),
		cmocka_unit_test(test_missing_directories_are_reported_or_created),
		cmocka_unit_test(test_plan_check_refuses_symlinked_destinations),
		cmocka_unit_test(test_plan_add_checks_the_host_side),
		cmocka_unit_test(test_root_may_not_be_the_host_root),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
