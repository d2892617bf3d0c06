/* Unit tests: the in-root resolver never leaves its root.  Every test
 * runs twice: through openat2 and through the component walk (the kernels
 * of RHEL 8 have no openat2), and both must give the same answer.  The
 * image tree carries the links a hostile image would: an absolute link to
 * a host directory, a relative one that climbs out, a loop. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "inroot.h"

static char root[64], host[96];
static int rootfd = -1;

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
	bool *walk_only = *state;
	char t[160];

	snprintf(root, sizeof(root), "/tmp/ctrun-test-inroot.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(host, sizeof(host), "%s-host", root);
	assert_int_equal(mkdir(host, 0755), 0);
	snprintf(t, sizeof(t), "%s/secret", host);
	close(open(t, O_CREAT | O_WRONLY, 0644));
	mk("usr", true);
	mk("usr/lib", true);
	mk("usr/lib/libc.so", false);
	mk("etc", true);
	mk("etc/environment", false);
	mk("file", false);
	ln("lib", "usr/lib64");            /* relative, stays inside */
	ln(host, "dev");                   /* absolute: names the host directory */
	ln("/etc", "etc2");                /* absolute, inside under chroot rules */
	ln("../../../../../../etc", "up"); /* relative, climbs out */
	ln("b", "a");
	ln("a", "b");                      /* a loop */
	ln("/newdir/made", "dangling");    /* absolute, to nothing yet */
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	inroot_use_openat2(!*walk_only);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	close(rootfd);
	inroot_use_openat2(true);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, host);
	return system(cmd) == 0 ? 0 : -1;
}

/* The inode of ROOT/rel, not following a final link. */
static ino_t ino_of(const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_ino;
}

static ino_t ino_fd(int fd)
{
	struct stat st;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return st.st_ino;
}

static void test_relative_link_inside_is_followed(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ino_fd(inroot_open(rootfd, "/usr/lib64/libc.so", O_PATH, 0, INROOT_CHROOT,
					    &e)), ino_of("usr/lib/libc.so"));
	assert_int_equal(ino_fd(inroot_open(rootfd, "usr/./lib/../lib64/libc.so", O_PATH, 0,
					    INROOT_BENEATH, &e)), ino_of("usr/lib/libc.so"));
}

static void test_absolute_link_restarts_at_the_root_under_chroot(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ino_fd(inroot_open(rootfd, "etc2/environment", O_RDONLY, 0, INROOT_CHROOT,
					    &e)), ino_of("etc/environment"));
	/* /dev -> the host directory: looked up inside the root, where it is not. */
	assert_int_equal(inroot_open(rootfd, "dev/secret", O_RDONLY, 0, INROOT_CHROOT, &e), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_absolute_link_is_refused_beneath(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(inroot_open(rootfd, "/dev/secret", O_RDONLY, 0, INROOT_BENEATH, &e), -1);
	assert_int_equal(errno, EXDEV);
	assert_non_null(strstr(e.msg, "/dev in the image is a symlink to the absolute path"));
}

static void test_climbing_out_stops_at_the_root_or_is_refused(void **state)
{
	char leaf[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ino_fd(inroot_open(rootfd, "up/environment", O_RDONLY, 0, INROOT_CHROOT,
					    &e)), ino_of("etc/environment"));
	assert_int_equal(ino_fd(inroot_open(rootfd, "/../../etc/environment", O_RDONLY, 0,
					    INROOT_CHROOT, &e)), ino_of("etc/environment"));
	assert_int_equal(inroot_open(rootfd, "up/environment", O_RDONLY, 0, INROOT_BENEATH, &e), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(inroot_parent(rootfd, "/up/x", INROOT_BENEATH, true, leaf, sizeof(leaf), &e),
			 -1);
	assert_non_null(strstr(e.msg, "symlink /up -> ../../../../../../etc climbs out"));
	assert_int_equal(inroot_parent(rootfd, "/../etc/x", INROOT_BENEATH, false, leaf, sizeof(leaf),
				       &e), -1);
	assert_non_null(strstr(e.msg, "'..' would leave the container root"));
}

static void test_loops_and_files_in_the_path_fail(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(inroot_open(rootfd, "a/x", O_RDONLY, 0, INROOT_CHROOT, &e), -1);
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(e.msg, "too many levels"));
	assert_int_equal(inroot_open(rootfd, "file/x", O_RDONLY, 0, INROOT_CHROOT, &e), -1);
	assert_int_equal(errno, ENOTDIR);
}

static void test_no_links_refuses_every_link(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_int_equal(ino_fd(inroot_open(rootfd, "/usr/lib/libc.so", O_PATH, 0, INROOT_NO_LINKS,
					    &e)), ino_of("usr/lib/libc.so"));
	assert_int_equal(inroot_open(rootfd, "/usr/lib64/libc.so", O_PATH, 0, INROOT_NO_LINKS, &e),
			 -1);
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(e.msg, "/usr/lib64 in the image is a symlink (to lib)"));
}

static void test_nofollow_opens_the_link_itself(void **state)
{
	struct err e = { 0 };
	struct stat st;
	int fd = inroot_open(rootfd, "/dev", O_PATH | O_NOFOLLOW, 0, INROOT_BENEATH, &e);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
	assert_true(S_ISLNK(st.st_mode));
	close(fd);
}

static void test_create_through_an_absolute_link_lands_inside(void **state)
{
	struct err e = { 0 };
	char p[256];
	struct stat st;
	int fd;

	(void)state;
	mk("newdir", true);
	fd = inroot_open(rootfd, "dangling", O_WRONLY | O_CREAT, 0644, INROOT_CHROOT, &e);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/newdir/made", root);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void test_parent_gives_the_directory_and_the_unfollowed_name(void **state)
{
	char leaf[64], p[256];
	struct err e = { 0 };
	struct stat st;
	ino_t made;
	int fd;

	(void)state;
	fd = inroot_parent(rootfd, "/usr/lib64/libc.so", INROOT_BENEATH, false, leaf, sizeof(leaf), &e);
	assert_string_equal(leaf, "libc.so");
	assert_int_equal(ino_fd(fd), ino_of("usr/lib"));
	fd = inroot_parent(rootfd, "/usr/lib64", INROOT_BENEATH, false, leaf, sizeof(leaf), &e);
	assert_string_equal(leaf, "lib64");
	assert_int_equal(ino_fd(fd), ino_of("usr"));
	/* Missing directories: reported, or made inside the root. */
	assert_int_equal(inroot_parent(rootfd, "/opt/nv/x", INROOT_BENEATH, false, leaf,
				       sizeof(leaf), &e), -1);
	assert_int_equal(errno, ENOENT);
	snprintf(p, sizeof(p), "%s/opt", root);
	assert_int_equal(lstat(p, &st), -1);
	fd = inroot_parent(rootfd, "/opt/nv/x", INROOT_BENEATH, true, leaf, sizeof(leaf), &e);
	made = ino_fd(fd);
	assert_int_equal(made, ino_of("opt/nv"));
	assert_int_equal(inroot_parent(rootfd, "/usr/..", INROOT_CHROOT, false, leaf, sizeof(leaf),
				       &e), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_mkdirs_follows_links_inside(void **state)
{
	struct err e = { 0 };
	char p[256];
	struct stat st;
	ino_t made;

	(void)state;
	made = ino_fd(inroot_mkdirs(rootfd, "/etc2/new/deeper", 0755, INROOT_CHROOT, &e));
	assert_int_equal(made, ino_of("etc/new/deeper"));
	/* Through the climbing link: made in the root's /etc, not the host's. */
	made = ino_fd(inroot_mkdirs(rootfd, "up/new2", 0755, INROOT_CHROOT, &e));
	assert_int_equal(made, ino_of("etc/new2"));
	snprintf(p, sizeof(p), "%s/x", host);
	assert_int_equal(inroot_mkdirs(rootfd, "/dev/x", 0755, INROOT_BENEATH, &e), -1);
	assert_int_equal(lstat(p, &st), -1);
}

static void test_resolve_gives_the_symlink_free_path(void **state)
{
	char out[256], want[256];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(inroot_resolve(rootfd, "/usr/lib64/x/y", INROOT_CHROOT, true, out,
					sizeof(out), &e), 0);
	assert_string_equal(out, "usr/lib/x/y");
	assert_int_equal(inroot_resolve(rootfd, "/dev/nvidia0", INROOT_CHROOT, true, out,
					sizeof(out), &e), 0);
	snprintf(want, sizeof(want), "%s/nvidia0", host + 1); /* the host's path, in the root */
	assert_string_equal(out, want);
	assert_int_equal(inroot_resolve(rootfd, "/usr/lib64", INROOT_CHROOT, false, out,
					sizeof(out), &e), 0);
	assert_string_equal(out, "usr/lib64");
	assert_int_equal(inroot_resolve(rootfd, "/up", INROOT_CHROOT, true, out, sizeof(out), &e), 0);
	assert_string_equal(out, "etc");
	assert_int_equal(inroot_resolve(rootfd, "/missing/../usr/lib64", INROOT_CHROOT, true, out,
					sizeof(out), &e), 0);
	assert_string_equal(out, "usr/lib");
	assert_int_equal(inroot_resolve(rootfd, "/", INROOT_CHROOT, true, out, sizeof(out), &e), 0);
	assert_string_equal(out, ".");
}

#define BOTH(t)                                                              \
	cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, &openat2), \
	cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, &walk_only)

int main(void)
{
	static bool openat2 = false, walk_only = true;
	const struct CMUnitTest tests[] = {
		BOTH(test_relative_link_inside_is_followed),
		BOTH(test_absolute_link_restarts_at_the_root_under_chroot),
		BOTH(test_absolute_link_is_refused_beneath),
		BOTH(test_climbing_out_stops_at_the_root_or_is_refused),
		BOTH(test_loops_and_files_in_the_path_fail),
		BOTH(test_no_links_refuses_every_link),
		BOTH(test_nofollow_opens_the_link_itself),
		BOTH(test_create_through_an_absolute_link_lands_inside),
		BOTH(test_parent_gives_the_directory_and_the_unfollowed_name),
		BOTH(test_mkdirs_follows_links_inside),
		BOTH(test_resolve_gives_the_symlink_free_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
