/* Unit tests: a path resolved in a streamed squashfs's tree in memory
 * (mtree_resolve) lands where it lands on disk (inroot_resolve, chroot
 * semantics): one walk (core/pathwalk.c) over both back ends.  The same
 * small image is built both ways, with relative, absolute, climbing,
 * dangling and looping symlinks, and each path of the table must give the
 * path written in it (or the errno) on disk and in memory alike. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "squash/mtree.h"

/* The image: directories (target NULL, not a file), files, symlinks. */
static const struct {
	const char *path;
	char kind; /* 'd' directory, 'f' file, 'l' symlink */
	const char *target;
} image[] = {
	{ "usr", 'd', NULL },
	{ "usr/lib", 'd', NULL },
	{ "usr/lib/libc.so", 'f', NULL },
	{ "etc", 'd', NULL },
	{ "file", 'f', NULL },
	{ "lib", 'l', "usr/lib" },
	{ "abs", 'l', "/usr" },
	{ "up", 'l', "../../.." },
	{ "evil", 'l', "/etc" },
	{ "usr/lib/back", 'l', "../../lib" },
	{ "usr/lib/home", 'l', "/etc" },
	{ "dangling", 'l', "nowhere/x" },
	{ "loop", 'l', "loop" },
	{ "ping", 'l', "pong" },
	{ "pong", 'l', "ping/x" },
};

static const struct {
	const char *path;
	bool follow_last;
	const char *want; /* NULL: fails with errno `err` */
	int err;
} cases[] = {
	{ ".", true, ".", 0 },
	{ "/", true, ".", 0 },
	{ "usr/./lib//libc.so", true, "usr/lib/libc.so", 0 },
	{ "lib/libc.so", true, "usr/lib/libc.so", 0 },
	{ "lib", false, "lib", 0 },
	{ "lib", true, "usr/lib", 0 },
	{ "lib/..", true, "usr", 0 },
	{ "abs/lib/x", true, "usr/lib/x", 0 },
	{ "up/etc/passwd", true, "etc/passwd", 0 },
	{ "evil/passwd", true, "etc/passwd", 0 },
	{ "../../x", true, "x", 0 },
	{ "usr/lib/back/back/libc.so", true, "usr/lib/libc.so", 0 },
	{ "usr/lib/home/passwd", true, "etc/passwd", 0 },
	{ "lib/home/../usr", true, "usr", 0 },
	{ "missing/dir/x", true, "missing/dir/x", 0 },
	{ "missing/../lib/libc.so", true, "usr/lib/libc.so", 0 },
	{ "dangling", true, "nowhere/x", 0 },
	{ "dangling", false, "dangling", 0 },
	{ "dangling/y", true, "nowhere/x/y", 0 },
	{ "loop", false, "loop", 0 },
	{ "loop/x", true, NULL, ELOOP },
	{ "ping", true, NULL, ELOOP },
	{ "file/x", true, NULL, ENOTDIR },
	{ "file", true, "file", 0 },
};

static char dir[64];
static int rootfd = -1;
static struct mtree tree;

/* Both builds fail softly: a group setup that fails still removes what it made. */
static int build_disk(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ctrun-mtree-walk.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	for (size_t i = 0; i < sizeof(image) / sizeof(image[0]); i++) {
		int fd = -1;

		if (image[i].kind == 'd')
			fd = mkdirat(rootfd, image[i].path, 0755);
		else if (image[i].kind == 'l')
			fd = symlinkat(image[i].target, rootfd, image[i].path);
		else if ((fd = openat(rootfd, image[i].path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
			fd = close(fd);
		if (fd < 0)
			return -1;
	}
	return 0;
}

static int build_tree(void)
{
	mtree_init(&tree, 0);
	for (size_t i = 0; i < sizeof(image) / sizeof(image[0]); i++) {
		const char *p = image[i].path, *slash = strrchr(p, '/');
		char parent[PATH_MAX];
		uint32_t mode = image[i].kind == 'd' ? S_IFDIR | 0755
				: image[i].kind == 'f' ? S_IFREG | 0644 : S_IFLNK | 0777;
		struct minode *ino = mtree_inode(&tree, mode);
		struct mnode *d;

		snprintf(parent, sizeof(parent), "%.*s", slash != NULL ? (int)(slash - p) : 1,
			 slash != NULL ? p : ".");
		d = mtree_mkparents(&tree, parent);
		if (ino == NULL || d == NULL ||
		    (image[i].kind == 'l' &&
		     mtree_set_target(&tree, ino, image[i].target, strlen(image[i].target)) < 0) ||
		    mtree_link(&tree, d, slash != NULL ? slash + 1 : p, ino) == NULL)
			return -1;
	}
	return 0;
}

static int teardown(void **state);

static int setup(void **state)
{
	if (build_disk() == 0 && build_tree() == 0)
		return 0;
	teardown(state);
	return -1;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = sizeof(image) / sizeof(image[0]); rootfd >= 0 && i-- > 0;)
		unlinkat(rootfd, image[i].path, image[i].kind == 'd' ? AT_REMOVEDIR : 0);
	if (rootfd >= 0)
		close(rootfd);
	if (dir[0] != '\0')
		rmdir(dir);
	mtree_free(&tree, NULL);
	return 0;
}

static void test_each_path_lands_in_the_same_place_on_disk_and_in_memory(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char disk[PATH_MAX], mem[PATH_MAX];
		int rd, rm, ed, em;

		print_message("%s (follow_last %d)\n", cases[i].path, cases[i].follow_last);
		errno = 0;
		rd = inroot_resolve(rootfd, cases[i].path, INROOT_CHROOT, cases[i].follow_last, disk,
				    sizeof(disk), NULL);
		ed = errno;
		errno = 0;
		rm = mtree_resolve(&tree, cases[i].path, cases[i].follow_last, mem, sizeof(mem));
		em = errno;
		if (cases[i].want == NULL) {
			assert_int_equal(rd, -1);
			assert_int_equal(ed, cases[i].err);
			assert_int_equal(rm, -1);
			assert_int_equal(em, cases[i].err);
			continue;
		}
		assert_int_equal(rd, 0);
		assert_string_equal(disk, cases[i].want);
		assert_int_equal(rm, 0);
		assert_string_equal(mem, cases[i].want);
	}
}

/* Over NAME_MAX in one name, or over PATH_MAX in all: refused both ways. */
static void test_names_and_paths_too_long_are_refused_both_ways(void **state)
{
	static char name[NAME_MAX + 2], path[PATH_MAX * 2 + 8], out[PATH_MAX];

	(void)state;
	memset(name, 'n', NAME_MAX + 1);
	assert_int_equal(inroot_resolve(rootfd, name, INROOT_CHROOT, true, out, sizeof(out), NULL),
			 -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(mtree_resolve(&tree, name, true, out, sizeof(out)), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	for (size_t i = 0; i + 2 < sizeof(path); i += 2)
		memcpy(path + i, "m/", 2);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(inroot_resolve(rootfd, path, INROOT_CHROOT, true, out, sizeof(out), NULL),
			 -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(mtree_resolve(&tree, path, true, out, sizeof(out)), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_path_lands_in_the_same_place_on_disk_and_in_memory),
		cmocka_unit_test(test_names_and_paths_too_long_are_refused_both_ways),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
