/* Unit tests: an unpacked image keeps no device node, no setuid or setgid
 * program and no file capability, whoever unpacks it (image_sanitize).
 * Run as root (make check is): the squashfs is made by mksquashfs from a
 * tree holding a real device node, a setuid file and a capability. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "image.h"
#include "unpack/unpack.h"

static char top[64];

/* Runs `cmd` with every "@" replaced by path (no quoting: test paths only). */
static void sh(const char *cmd, const char *path)
{
	char buf[16384];
	size_t o = 0;

	for (const char *c = cmd; *c != '\0' && o + strlen(path) + 2 < sizeof(buf); c++) {
		if (*c == '@') {
			memcpy(buf + o, path, strlen(path));
			o += strlen(path);
		} else {
			buf[o++] = *c;
		}
	}
	buf[o] = '\0';
	assert_int_equal(system(buf), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/ctrun-test-sanitize.XXXXXX");
	assert_non_null(mkdtemp(top));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf '@'", top);
	return 0;
}

static void test_squashfs_as_root_keeps_no_device_fifo_setuid_capability_or_shared_write(void **state)
{
	char p[256], img[128], dest[128];
	struct err e = { 0 };
	struct stat st;

	(void)state;
	assert_int_equal(geteuid(), 0); /* make check runs as root */
	snprintf(p, sizeof(p), "%s/tree", top);
	sh("mkdir -p @/bin @/dev @/data/sub", p);
	snprintf(img, sizeof(img), "%s/tree/dev/sda", top);
	assert_int_equal(mknod(img, S_IFBLK | 0666, makedev(8, 0)), 0);
	snprintf(img, sizeof(img), "%s/tree/data/sub/tty", top);
	assert_int_equal(mknod(img, S_IFCHR | 0666, makedev(5, 0)), 0);
	snprintf(img, sizeof(img), "%s/tree/data/fifo", top);
	assert_int_equal(mkfifo(img, 0644), 0);
	snprintf(img, sizeof(img), "%s/tree/data/open", top);
	sh("touch @", img);
	assert_int_equal(chmod(img, 0666), 0);
	snprintf(img, sizeof(img), "%s/tree/data/sub", top);
	assert_int_equal(chmod(img, 01777), 0);
	snprintf(img, sizeof(img), "%s/tree/bin/su", top);
	sh("cp /bin/true @", img);
	assert_int_equal(chmod(img, 04755), 0);
	snprintf(img, sizeof(img), "%s/tree/bin/sg", top);
	sh("cp /bin/true @", img);
	assert_int_equal(chmod(img, 02755), 0);
	/* cap_net_raw+ep, as setcap writes it (vfs_cap_data revision 2). */
	{
		unsigned char cap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00,
					  0x00, 0x20, 0x00, 0x00 };

		assert_int_equal(setxattr(img, "security.capability", cap, sizeof(cap), 0), 0);
	}
	snprintf(img, sizeof(img), "%s/img.sqsh", top);
	snprintf(dest, sizeof(dest), "mksquashfs %s/tree %s -quiet -no-progress", top, img);
	assert_int_equal(system(dest), 0);
	snprintf(dest, sizeof(dest), "%s/out", top);
	assert_int_equal(mkdir(dest, 0700), 0);
	assert_int_equal(image_unpack(img, IMAGE_SQUASHFS, dest, &e), 0);

	snprintf(p, sizeof(p), "%s/dev/sda", dest);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/data/sub/tty", dest);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/data/fifo", dest);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/data/open", dest);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	snprintf(p, sizeof(p), "%s/data/sub", dest);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 01755); /* sticky kept, write for others not */
	snprintf(p, sizeof(p), "%s/bin/su", dest);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(p, sizeof(p), "%s/bin/sg", dest);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(getxattr(p, "security.capability", NULL, 0), -1);
}

static void test_directories_nested_too_deep_are_refused(void **state)
{
	char p[8192];
	struct err e = { 0 };
	size_t len;

	(void)state;
	len = (size_t)snprintf(p, sizeof(p), "%s/deep", top);
	for (int i = 0; i < 300 && len + 3 < sizeof(p); i++) {
		memcpy(p + len, "/d", 3);
		len += 2;
	}
	sh("mkdir -p '@'", p);
	snprintf(p, sizeof(p), "%s/deep", top);
	assert_int_equal(image_sanitize(p, &e), -1);
	assert_non_null(strstr(e.msg, "nested deeper than 256"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_squashfs_as_root_keeps_no_device_fifo_setuid_capability_or_shared_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directories_nested_too_deep_are_refused, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
