/* Unit tests: the ld.so.cache parser (synthetic caches, hostile offsets,
 * and this machine's real cache against `ldconfig -p`) and the choice of
 * driver libraries libnvidia-container would make. */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctrtest.h"
#include "state.h"
#include "ldcache.h"
#include "rootfs.h"
#include "plan.h"
#include "driver.h"

struct lib {
	const char *key, *value;
	int32_t flags;
};

/* A new-format cache ("glibc-ld.so.cache1.1") as ldconfig writes it,
 * after `prefix` bytes of old-format table (0 for none). */
static size_t build_cache(const struct lib *libs, size_t n, char *buf, size_t size, bool old)
{
	size_t base = 0, strings, off;
	uint32_t v32;

	memset(buf, 0, size);
	if (old) {
		memcpy(buf, "ld.so-1.7.0", 11);
		v32 = 1;
		memcpy(buf + 12, &v32, 4);
		base = (16 + 12 + 7) & ~(size_t)7;
	}
	memcpy(buf + base, "glibc-ld.so.cache1.1", 20);
	v32 = (uint32_t)n;
	memcpy(buf + base + 20, &v32, 4);
	buf[base + 28] = 2; /* little endian */
	strings = 48 + n * 24;
	off = strings;
	for (size_t i = 0; i < n; i++) {
		char *ent = buf + base + 48 + i * 24;
		uint32_t k = (uint32_t)off, v;

		strcpy(buf + base + off, libs[i].key);
		off += strlen(libs[i].key) + 1;
		v = (uint32_t)off;
		strcpy(buf + base + off, libs[i].value);
		off += strlen(libs[i].value) + 1;
		memcpy(ent, &libs[i].flags, 4);
		memcpy(ent + 4, &k, 4);
		memcpy(ent + 8, &v, 4);
	}
	v32 = (uint32_t)(off - strings);
	memcpy(buf + base + 24, &v32, 4);
	return base + off;
}

static const struct lib two[] = {
	{ "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x0303 },
	{ "libfoo.so.2", "/usr/lib/i386-linux-gnu/libfoo.so.2", 0x0003 },
};

static void test_parse_new_format(void **state)
{
	char buf[1024];
	size_t len = build_cache(two, 2, buf, sizeof(buf), false), n;
	struct hook_ldcache_entry *v;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_ldcache_parse(buf, len, &v, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].key, "libcuda.so.1");
	assert_string_equal(v[0].value, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	assert_true(hook_ldcache_native(v[0].flags));
	assert_false(hook_ldcache_native(v[1].flags)); /* 32-bit x86 */
	free(v);
}

static void test_parse_old_format_with_new_table(void **state)
{
	char buf[1024];
	size_t len = build_cache(two, 1, buf, sizeof(buf), true), n;
	struct hook_ldcache_entry *v;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_ldcache_parse(buf, len, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].key, "libcuda.so.1");
	free(v);
}

static void expect_bad(char *buf, size_t len, const char *needle)
{
	struct hook_ldcache_entry *v = NULL;
	struct err e = { 0 };
	size_t n;

	assert_int_equal(hook_ldcache_parse(buf, len, &v, &n, &e), -1);
	assert_null(v);
	if (strstr(e.msg, needle) == NULL)
		fail_msg("'%s' does not mention '%s'", e.msg, needle);
}

static void test_hostile_caches_are_errors(void **state)
{
	char buf[1024];
	size_t len = build_cache(two, 2, buf, sizeof(buf), false);
	uint32_t big = 1000000, past = (uint32_t)len + 10;

	(void)state;
	expect_bad(buf, 30, "truncated header");
	expect_bad(buf, 10, "unknown magic");
	/* the last string loses its NUL */
	expect_bad(buf, len - 1, "points outside");
	memcpy(buf + 20, &big, 4);
	expect_bad(buf, len, "exceed the file");
	len = build_cache(two, 2, buf, sizeof(buf), false);
	memcpy(buf + 48 + 4, &past, 4);
	expect_bad(buf, len, "points outside");
	len = build_cache(two, 2, buf, sizeof(buf), false);
	buf[28] = 3; /* big endian */
	expect_bad(buf, len, "byte order");
}

static void test_real_cache_matches_ldconfig(void **state)
{
	struct hook_ldcache_entry *v;
	struct err e = { 0 };
	char *buf, line[256];
	size_t n;
	long want = -1;
	bool libc = false;
	FILE *p;

	(void)state;
	if (access("/etc/ld.so.cache", R_OK) != 0)
		skip();
	assert_int_equal(hook_driver_read_ldcache("/etc/ld.so.cache", &buf, &v, &n, &e), 0);
	p = popen("ldconfig -p 2>/dev/null", "r");
	if (p != NULL && fgets(line, sizeof(line), p) != NULL)
		sscanf(line, "%ld libs found", &want);
	if (p != NULL)
		pclose(p);
	if (want < 0)
		skip();
	assert_int_equal((long)n, want);
	for (size_t i = 0; i < n; i++)
		libc |= strcmp(v[i].key, "libc.so.6") == 0 && hook_ldcache_native(v[i].flags);
	assert_true(libc);
	free(v);
	free(buf);
}

/* "Has the image the driver?" is answered inside the image: an absolute
 * libcuda.so.1 link to a file that exists only on the host is no driver
 * (it was followed on the host before), one to the image's own file is. */
static void test_image_libcuda_is_looked_up_inside_the_image(void **state)
{
	const char *root = ((struct tmpdir *)*state)->dir; /* the image */
	char p[256], cmd[320];
	struct hook_root r;
	struct err e = { 0 };

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/usr/lib64 && touch %s/usr/lib64/libcuda.so.535.1",
		 root, root);
	assert_int_equal(system(cmd), 0);
	snprintf(p, sizeof(p), "%s/usr/lib64/libcuda.so.1", root);
	assert_int_equal(symlink("/etc/hostname", p), 0); /* the host's file, not the image's */
	assert_int_equal(hook_root_open(root, &r, &e), 0);
	assert_false(hook_image_has_libcuda(&r, "/usr/lib64", ""));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink("/usr/lib64/libcuda.so.535.1", p), 0); /* the image's own */
	assert_true(hook_image_has_libcuda(&r, "/usr/lib64", ""));
	assert_false(hook_image_has_libcuda(&r, "/usr/lib64", "999.1"));
	hook_root_close(&r);
}

static void test_driver_library_names(void **state)
{
	(void)state;
	assert_string_equal(hook_driver_lib_name("libcuda.so.1"), "libcuda.so");
	assert_string_equal(hook_driver_lib_name("libcuda.so"), "libcuda.so");
	assert_string_equal(hook_driver_lib_name("libnvidia-ml.so.1"), "libnvidia-ml.so");
	assert_string_equal(hook_driver_lib_name("libnvidia-ptxjitcompiler.so.1"),
			    "libnvidia-ptxjitcompiler.so");
	assert_string_equal(hook_driver_lib_name("libnvidia-nvvm.so.4"), "libnvidia-nvvm.so");
	/* the CUDA toolkit's, not the driver's */
	assert_null(hook_driver_lib_name("libcudart.so.13"));
	assert_null(hook_driver_lib_name("libnvvm.so.4"));
	assert_null(hook_driver_lib_name("libnvidia-mlx.so"));
}

static void test_driver_file_versions(void **state)
{
	(void)state;
	assert_true(hook_driver_file_matches("libcuda.so.535.104.05", "libcuda.so", "535.104.05"));
	assert_false(hook_driver_file_matches("libcuda.so.550.54.15", "libcuda.so", "535.104.05"));
	assert_false(hook_driver_file_matches("libcuda.so", "libcuda.so", "535.104.05"));
	/* no driver loaded: any real version, never a stub or a bare soname */
	assert_true(hook_driver_file_matches("libcuda.so.999.12.3", "libcuda.so", ""));
	assert_false(hook_driver_file_matches("libcuda.so.1", "libcuda.so", ""));
	assert_false(hook_driver_file_matches("libcuda.so", "libcuda.so", ""));
	assert_false(hook_driver_file_matches("libcuda.so.1..2", "libcuda.so", ""));
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("\177ELF", f);
	fclose(f);
}

static void test_plan_libraries_of_the_loaded_driver(void **state)
{
	const char *dir = ((struct tmpdir *)*state)->dir; /* the host's library folder */
	char a[256], b[256], l1[256], l2[256];
	struct hook_plan p = { 0 };
	struct err e = { 0 };
	struct hook_ldcache_entry ents[2];
	bool file = false, soname = false, dev = false, compat = false;

	snprintf(a, sizeof(a), "%s/libcuda.so.535.104.05", dir);
	snprintf(b, sizeof(b), "%s/libcuda.so.550.1.2", dir); /* a CUDA compat copy */
	snprintf(l1, sizeof(l1), "%s/libcuda.so.1", dir);
	snprintf(l2, sizeof(l2), "%s/compat.so.1", dir);
	touch(a);
	touch(b);
	assert_int_equal(symlink("libcuda.so.535.104.05", l1), 0);
	assert_int_equal(symlink("libcuda.so.550.1.2", l2), 0);
	ents[0] = (struct hook_ldcache_entry){ "libcuda.so.1", l2, 0x0303, 0 };
	ents[1] = (struct hook_ldcache_entry){ "libcuda.so.1", l1, 0x0303, 0 };
	assert_true(hook_plan_driver(ents, 2, "535.104.05", "/usr/lib64", "", &p, &e) >= 1);
	for (size_t i = 0; i < p.n; i++) {
		file |= p.v[i].kind == HOOK_ITEM_FILE && strcmp(p.v[i].src, a) == 0 &&
			strcmp(p.v[i].dst, "/usr/lib64/libcuda.so.535.104.05") == 0;
		compat |= strcmp(p.v[i].src, b) == 0;
		soname |= p.v[i].kind == HOOK_ITEM_LINK &&
			  strcmp(p.v[i].dst, "/usr/lib64/libcuda.so.1") == 0 &&
			  strcmp(p.v[i].src, "libcuda.so.535.104.05") == 0;
		dev |= p.v[i].kind == HOOK_ITEM_LINK && strcmp(p.v[i].dst, "/usr/lib64/libcuda.so") == 0 &&
		       strcmp(p.v[i].src, "libcuda.so.1") == 0;
	}
	assert_true(file);
	assert_true(soname);
	assert_true(dev);
	assert_false(compat);
	hook_plan_free(&p);
}

/* A unix socket at path (a daemon's IPC endpoint). */
static void sock_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

static bool planned(const struct hook_plan *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].kind == HOOK_ITEM_IPC && strcmp(p->v[i].src, path) == 0)
			return true;
	return false;
}

/* MPS's pipe directory is /tmp/nvidia-mps: in /tmp any user may create it
 * first, and the hook bound whatever was there into the container,
 * writable, as MPS's pipes (the job's CUDA then talks to that user's
 * pipes).  An endpoint is taken only where no other user could have put
 * it: below directories no one else can write, or, in a sticky one, when
 * it is root's or the caller's.  A daemon's own account below /run is
 * fine (nvidia-persistenced runs as its user there).  Plays the other
 * users with chown: needs root. */
static void test_ipc_endpoints_another_user_could_plant_are_left_out(void **state)
{
	struct tmpdir *td = *state;
	const char *tmp = tmpdir_path(td, "tmp"), *run = tmpdir_path(td, "run");
	char theirs[256], mine[256], open_[256], osock[256], daemon[256], dsock[256];
	const char *paths[4] = { theirs, mine, osock, dsock };
	struct hook_plan p = { 0 };
	struct err e = { 0 };

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(td->dir, 0755), 0);
	assert_int_equal(mkdir(tmp, 0777), 0);
	assert_int_equal(chmod(tmp, 01777), 0);
	snprintf(theirs, sizeof(theirs), "%s/nvidia-mps-theirs", tmp);
	snprintf(mine, sizeof(mine), "%s/nvidia-mps", tmp);
	assert_int_equal(mkdir(theirs, 0777), 0);
	assert_int_equal(chown(theirs, 65534, 65534), 0);
	assert_int_equal(mkdir(mine, 0755), 0);
	snprintf(open_, sizeof(open_), "%s/open", td->dir);
	snprintf(osock, sizeof(osock), "%s/socket", open_);
	assert_int_equal(mkdir(open_, 0777), 0);
	assert_int_equal(chmod(open_, 0777), 0);
	sock_at(osock);
	assert_int_equal(mkdir(run, 0755), 0);
	snprintf(daemon, sizeof(daemon), "%s/nvidia-persistenced", run);
	snprintf(dsock, sizeof(dsock), "%s/socket", daemon);
	assert_int_equal(mkdir(daemon, 0755), 0);
	sock_at(dsock);
	assert_int_equal(chown(dsock, 65534, 65534), 0);
	assert_int_equal(chown(daemon, 65534, 65534), 0);
	assert_int_equal(hook_plan_ipcs(paths, 4, &p, &e), 0);
	assert_false(planned(&p, theirs)); /* another user's, in the sticky place */
	assert_false(planned(&p, osock));  /* below a directory anyone can write */
	assert_true(planned(&p, mine));
	assert_true(planned(&p, dsock));
	hook_plan_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_new_format),
		cmocka_unit_test(test_parse_old_format_with_new_table),
		cmocka_unit_test(test_hostile_caches_are_errors),
		cmocka_unit_test(test_real_cache_matches_ldconfig),
		cmocka_unit_test_setup_teardown(test_image_libcuda_is_looked_up_inside_the_image, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test(test_driver_library_names),
		cmocka_unit_test(test_driver_file_versions),
		cmocka_unit_test_setup_teardown(test_plan_libraries_of_the_loaded_driver, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_ipc_endpoints_another_user_could_plant_are_left_out,
						tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
