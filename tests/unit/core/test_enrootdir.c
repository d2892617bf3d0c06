/* Unit tests: enroot's configuration directories (enrootdir.h), as
 * enroot.in sets them: `${VAR:-default}`, so empty is unset. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "enrootdir.h"

static void test_sysconf_from_the_variable_else_etc_enroot(void **state)
{
	char *set[] = { "ENROOT_SYSCONF_PATH=/opt/enroot/etc", NULL };
	char *empty[] = { "ENROOT_SYSCONF_PATH=", "HOME=/home/u", NULL };
	char *none[] = { "HOME=/home/u", NULL };
	char buf[256];

	(void)state;
	assert_int_equal(enroot_sysconf_path(set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/opt/enroot/etc");
	assert_int_equal(enroot_sysconf_path(none, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/enroot");
	assert_int_equal(enroot_sysconf_path(NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/enroot");
	/* The bug this rule fixed: empty was "" (so "/hooks.d") for the
	 * enroot adapter while `ctrun hooks install` took /etc/enroot. */
	assert_int_equal(enroot_sysconf_path(empty, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/enroot");
}

static void test_config_path_then_xdg_then_home(void **state)
{
	char *conf[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", "ENROOT_CONFIG_PATH=/e", NULL };
	char *xdg[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", NULL };
	char *home[] = { "HOME=/home/u", NULL };
	char *empties[] = { "HOME=/home/u", "XDG_CONFIG_HOME=", "ENROOT_CONFIG_PATH=", NULL };
	char buf[256];

	(void)state;
	assert_int_equal(enroot_config_path(conf, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/e");
	assert_int_equal(enroot_config_path(xdg, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/cfg/enroot");
	assert_int_equal(enroot_config_path(home, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/.config/enroot");
	assert_int_equal(enroot_config_path(empties, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/.config/enroot");
}

static void test_no_user_directory_without_home(void **state)
{
	char *none[] = { "PATH=/bin", NULL };
	char *empty[] = { "HOME=", "XDG_CONFIG_HOME=", NULL };
	char buf[256] = "old";

	(void)state;
	assert_int_equal(enroot_config_path(none, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(buf, "");
	assert_int_equal(enroot_config_path(empty, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_too_long_is_an_error_not_a_cut(void **state)
{
	char *home[] = { "HOME=/a-rather-long-home", NULL };
	char *sys[] = { "ENROOT_SYSCONF_PATH=/a-rather-long-sysconf", NULL };
	char buf[16];

	(void)state;
	assert_int_equal(enroot_config_path(home, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_string_equal(buf, "");
	assert_int_equal(enroot_sysconf_path(sys, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_string_equal(buf, "");
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
