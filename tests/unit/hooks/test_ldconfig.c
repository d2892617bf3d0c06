/* Unit tests: ctrun-hook runs the host's ldconfig over the image's tree with
 * CAP_SYS_CHROOT only, no_new_privs and a time bound, and that is still
 * enough for the real ldconfig to write the image's ld.so.cache.
 * The capability tests need root (make check runs as root); as a user
 * there is nothing to drop and they skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "rootpath.h"

struct fx {
	char dir[64];   /* scratch: the image's root and the stand-in */
	char fake[96];  /* a stand-in ldconfig */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/ctrun-test-ldconfig-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->fake, sizeof(f->fake), "%s/ldconfig", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static void write_fake(const struct fx *f, const char *body)
{
	FILE *fp = fopen(f->fake, "w");

	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n%s\n", body);
	fclose(fp);
	assert_int_equal(chmod(f->fake, 0755), 0);
}

/* The value of "Name:\t..." in file, as text. */
static void field(const char *file, const char *name, char *out, size_t size)
{
	char line[256];
	FILE *fp = fopen(file, "r");

	assert_non_null(fp);
	out[0] = '\0';
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ':') {
			snprintf(out, size, "%s", line + strlen(name) + 2);
			out[strcspn(out, "\n")] = '\0';
		}
	fclose(fp);
	assert_true(out[0] != '\0');
}

static void test_ldconfig_runs_with_only_cap_sys_chroot(void **state)
{
	struct fx *f = *state;
	char status[128], v[64];

	if (geteuid() != 0)
		skip();
	/* Its own /proc/self/status, written into ROOT ($2), the one place it writes. */
	write_fake(f, "exec cat /proc/self/status > \"$2/status\"");
	assert_int_equal(hook_ldconfig_run(f->fake, f->dir, "/usr/lib", 30), 0);
	snprintf(status, sizeof(status), "%s/status", f->dir);
	/* CAP_SYS_CHROOT is bit 18: 0x40000. */
	static const char *const want[][2] = {
		{ "CapEff", "0000000000040000" }, { "CapPrm", "0000000000040000" },
		{ "CapBnd", "0000000000040000" }, { "CapInh", "0000000000000000" },
		{ "CapAmb", "0000000000000000" }, { "NoNewPrivs", "1" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		field(status, want[i][0], v, sizeof(v));
		assert_string_equal(v, want[i][1]);
	}
}

static void test_ldconfig_inherits_no_descriptor(void **state)
{
	struct fx *f = *state;
	char fds[128], line[32];
	int fd, n = 0;
	FILE *fp;

	write_fake(f, "exec ls /proc/self/fd > \"$2/fds\"");
	fd = open("/dev/null", O_RDONLY); /* not O_CLOEXEC: it would be inherited */
	assert_true(fd >= 3);
	assert_int_equal(hook_ldconfig_run(f->fake, f->dir, "/usr/lib", 30), 0);
	close(fd);
	snprintf(fds, sizeof(fds), "%s/fds", f->dir);
	fp = fopen(fds, "r");
	assert_non_null(fp);
	/* ls's own: 0, 1 (the file), 2, and the directory it reads. */
	while (fgets(line, sizeof(line), fp) != NULL)
		n++;
	fclose(fp);
	assert_true(n <= 4);
}

static void test_ldconfig_is_killed_after_its_time(void **state)
{
	struct fx *f = *state;
	time_t t0 = time(NULL);

	write_fake(f, "exec sleep 600");
	assert_int_equal(hook_ldconfig_run(f->fake, f->dir, "/usr/lib", 1), -1);
	assert_true(time(NULL) - t0 < 60);
}

/* The real ldconfig still writes the image's cache with what it is left. */
static void test_real_ldconfig_writes_the_cache_with_reduced_privileges(void **state)
{
	struct fx *f = *state;
	char cmd[512], cache[128];
	struct stat st;

	if (geteuid() != 0 || access("/sbin/ldconfig", X_OK) != 0)
		skip();
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/etc %s/usr/lib/x86_64-linux-gnu && "
		 "cp /usr/lib/x86_64-linux-gnu/libz.so.1 %s/usr/lib/x86_64-linux-gnu/",
		 f->dir, f->dir, f->dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(hook_ldconfig_run("/sbin/ldconfig", f->dir, "/usr/lib/x86_64-linux-gnu",
					   30), 0);
	snprintf(cache, sizeof(cache), "%s/etc/ld.so.cache", f->dir);
	assert_int_equal(stat(cache, &st), 0);
	assert_true(st.st_size > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ldconfig_runs_with_only_cap_sys_chroot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ldconfig_inherits_no_descriptor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ldconfig_is_killed_after_its_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_ldconfig_writes_the_cache_with_reduced_privileges, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
