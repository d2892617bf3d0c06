/* Unit tests: enroot's configuration directories (enrootdir.h), as
 * enroot.in sets them: `${VAR:-default}`, so empty is unset. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "enrootdir.h"

/* The directory a rule gives for env, "ENOENT"/"ENAMETOOLONG" for its
 * error (then the buffer must be ""); buffers of `size` bytes. */
static const char *dir(int (*rule)(char *const *, char *, size_t), char **env, size_t size)
{
	static char buf[256];

	strcpy(buf, "old");
	if (rule(env, buf, size) == 0)
		return buf;
	assert_string_equal(buf, "");
	return errno == ENOENT ? "ENOENT" : errno == ENAMETOOLONG ? "ENAMETOOLONG" : "?";
}

static void test_sysconf_from_the_variable_else_etc_enroot(void **state)
{
	char *set[] = { "ENROOT_SYSCONF_PATH=/opt/enroot/etc", NULL };
	char *empty[] = { "ENROOT_SYSCONF_PATH=", "HOME=/home/u", NULL };
	char *none[] = { "HOME=/home/u", NULL };

	(void)state;
	assert_string_equal(dir(enroot_sysconf_path, set, 256), "/opt/enroot/etc");
	assert_string_equal(dir(enroot_sysconf_path, none, 256), "/etc/enroot");
	assert_string_equal(dir(enroot_sysconf_path, NULL, 256), "/etc/enroot");
	/* The bug this rule fixed: empty was "" (so "/hooks.d") for the
	 * enroot adapter while `ctrun hooks install` took /etc/enroot. */
	assert_string_equal(dir(enroot_sysconf_path, empty, 256), "/etc/enroot");
}

static void test_config_path_then_xdg_then_home(void **state)
{
	char *conf[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", "ENROOT_CONFIG_PATH=/e", NULL };
	char *xdg[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", NULL };
	char *home[] = { "HOME=/home/u", NULL };
	char *empties[] = { "HOME=/home/u", "XDG_CONFIG_HOME=", "ENROOT_CONFIG_PATH=", NULL };

	(void)state;
	assert_string_equal(dir(enroot_config_path, conf, 256), "/e");
	assert_string_equal(dir(enroot_config_path, xdg, 256), "/cfg/enroot");
	assert_string_equal(dir(enroot_config_path, home, 256), "/home/u/.config/enroot");
	assert_string_equal(dir(enroot_config_path, empties, 256), "/home/u/.config/enroot");
}

static void test_no_user_directory_without_home(void **state)
{
	char *none[] = { "PATH=/bin", NULL };
	char *empty[] = { "HOME=", "XDG_CONFIG_HOME=", NULL };

	(void)state;
	assert_string_equal(dir(enroot_config_path, none, 256), "ENOENT");
	assert_string_equal(dir(enroot_config_path, empty, 256), "ENOENT");
	assert_string_equal(dir(enroot_config_path, NULL, 256), "ENOENT");
}

static void test_too_long_is_an_error_not_a_cut(void **state)
{
	char *home[] = { "HOME=/a-rather-long-home", NULL };
	char *sys[] = { "ENROOT_SYSCONF_PATH=/a-rather-long-sysconf", NULL };

	(void)state;
	assert_string_equal(dir(enroot_config_path, home, 16), "ENAMETOOLONG");
	assert_string_equal(dir(enroot_sysconf_path, sys, 16), "ENAMETOOLONG");
	assert_string_equal(dir(enroot_sysconf_path, NULL, 12), "/etc/enroot");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysconf_from_the_variable_else_etc_enroot),
		cmocka_unit_test(test_config_path_then_xdg_then_home),
		cmocka_unit_test(test_no_user_directory_without_home),
		cmocka_unit_test(test_too_long_is_an_error_not_a_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
