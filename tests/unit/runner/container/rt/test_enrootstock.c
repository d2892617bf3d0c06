/* Unit tests of enrootstock.h: which of enroot's configuration files and
 * settings change what a container gets (issue 33: --runtime auto takes
 * ctrun's own start where nothing does).  The settings' rules follow
 * enroot's own reading of them (its `enroot` script's config::load and
 * config::fini, runtime.sh, 99-mellanox.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "enroot/enrootstock.h"

/* The 4.1.2 release's 10-home.sh and 10-system.fstab, by SHA-256. */
#define HOME_412 "8a23a5a394e121ba93103ffafa630885cf9988317b7c0016910ad555e1c7725d"
#define SYSTEM_FSTAB "5b94c2286afc8f1049c30fc5e10d389ee5bea79f8712eba088c1651bf1a271a4"

static void test_only_the_suffixes_enroot_reads_count(void **state)
{
	(void)state;
	assert_true(enroot_cfg_read("hooks.d", "50-site.sh"));
	assert_false(enroot_cfg_read("hooks.d", "50-site.sh.disabled"));
	assert_false(enroot_cfg_read("hooks.d", ".sh"));
	assert_true(enroot_cfg_read("mounts.d", "50-lustre.fstab"));
	assert_false(enroot_cfg_read("mounts.d", "50-lustre.sh"));
	assert_true(enroot_cfg_read("environ.d", "50-nccl.env"));
	assert_false(enroot_cfg_read("environ.d", "README"));
	assert_false(enroot_cfg_read("other.d", "x.sh"));
}

static void test_a_release_file_is_stock_under_its_own_name_only(void **state)
{
	(void)state;
	assert_true(enroot_stock_digest("hooks.d", "10-home.sh", HOME_412));
	assert_true(enroot_stock_digest("mounts.d", "10-system.fstab", SYSTEM_FSTAB));
	/* The same bytes under another name or in another directory are the site's. */
	assert_false(enroot_stock_digest("hooks.d", "50-home.sh", HOME_412));
	assert_false(enroot_stock_digest("mounts.d", "10-home.sh", HOME_412));
	/* An edited file is the site's. */
	assert_false(enroot_stock_digest("hooks.d", "10-home.sh", SYSTEM_FSTAB));
	assert_false(enroot_stock_file("hooks.d", "10-home.sh", "#!/bin/sh\n", 10));
	assert_false(enroot_stock_file("environ.d", "10-terminal.env", "", 0));
}

static void test_conf_settings_that_change_a_container(void **state)
{
	char key[64];
	struct {
		const char *text, *key; /* key NULL: adds nothing */
	} rows[] = {
		/* enroot.conf as installed: every line a comment */
		{ "#ENROOT_LIBRARY_PATH        /usr/lib/enroot\n"
		  "# Make the container root filesystem writable by default.\n"
		  "#ENROOT_ROOTFS_WRITABLE     no\n\n", NULL },
		{ "ENROOT_ROOTFS_WRITABLE     yes\n", "ENROOT_ROOTFS_WRITABLE" },
		{ "ENROOT_ROOTFS_WRITABLE     no\n", NULL },
		{ "ENROOT_ROOTFS_WRITABLE=\"false\"\n", NULL },
		{ "  ENROOT_UNSHARE_PID\ty  \n", "ENROOT_UNSHARE_PID" },
		{ "ENROOT_REMAP_ROOT y\n", "ENROOT_REMAP_ROOT" },
		{ "ENROOT_RESTRICT_DEV y\n", "ENROOT_RESTRICT_DEV" },
		/* enroot.conf wins over no environment: the directories count here */
		{ "ENROOT_SYSCONF_PATH /site/enroot\n", "ENROOT_SYSCONF_PATH" },
		/* a setting ctrun does not know counts */
		{ "ENROOT_SOMETHING_NEW 1\n", "ENROOT_SOMETHING_NEW" },
		{ "ENROOT_DATA_PATH /scratch/${USER}/enroot\nENROOT_SQUASH_OPTIONS -comp zstd\n"
		  "ENROOT_MOUNT_HOME y\nENROOT_LOGIN_SHELL y\nhttps_proxy http://p:3128\n", NULL },
		{ "MELLANOX_VISIBLE_DEVICES all\n", "MELLANOX_VISIBLE_DEVICES" },
		{ "MELLANOX_VISIBLE_DEVICES void\nMELLANOX_CONFIG_DIR /etc/ib\n", NULL },
		{ "NVIDIA_DRIVER_CAPABILITIES all\n", "NVIDIA_DRIVER_CAPABILITIES" },
		{ "FOO bar\nenroot_rootfs_writable yes\n", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		key[0] = '\0';
		if (rows[i].key == NULL) {
			if (enroot_conf_adds(rows[i].text, key, sizeof(key)))
				fail_msg("row %zu adds %s: %s", i, key, rows[i].text);
		} else {
			assert_true(enroot_conf_adds(rows[i].text, key, sizeof(key)));
			assert_string_equal(key, rows[i].key);
		}
	}
}

static void test_env_settings_that_change_a_container(void **state)
{
	char key[64];
	/* The paths, and what ctrun sets or removes for each run, do not count. */
	char *plain[] = { "PATH=/usr/bin:/bin", "HOME=/home/u", "ENROOT_RUNTIME_PATH=/run/x",
			  "ENROOT_SYSCONF_PATH=/site/enroot", "ENROOT_CONFIG_PATH=/home/u/.e",
			  "ENROOT_REMAP_ROOT=y", "NVIDIA_VISIBLE_DEVICES=all",
			  "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "ENROOT_RESTRICT_DEV=",
			  "ENROOT_ROOTFS_WRITABLE=n", "MELLANOX_VISIBLE_DEVICES=none", NULL };
	char *dev[] = { "PATH=/usr/bin", "ENROOT_RESTRICT_DEV=y", NULL };
	char *ib[] = { "MELLANOX_VISIBLE_DEVICES=0,1", NULL };
	char *req[] = { "NVIDIA_REQUIRE_CUDA=cuda>=12.0", NULL };

	(void)state;
	assert_false(enroot_env_adds(plain, key, sizeof(key)));
	assert_false(enroot_env_adds(NULL, key, sizeof(key)));
	assert_true(enroot_env_adds(dev, key, sizeof(key)));
	assert_string_equal(key, "ENROOT_RESTRICT_DEV");
	assert_true(enroot_env_adds(ib, key, sizeof(key)));
	assert_string_equal(key, "MELLANOX_VISIBLE_DEVICES");
	assert_true(enroot_env_adds(req, key, sizeof(key)));
	assert_string_equal(key, "NVIDIA_REQUIRE_CUDA");
}

static void test_script_names_its_conf_and_system_directory(void **state)
{
	char conf[256], sys[256];
	const char *script =
		"#! /usr/bin/env bash\n"
		"config::init() {\n"
		"    local -r file=\"$1\"\n"
		"}\n"
		"config::init \"/opt/e/etc/enroot/enroot.conf\"\n"
		"config::export ENROOT_SYSCONF_PATHS    \"/not/this\"\n"
		"config::export ENROOT_SYSCONF_PATH     \"/opt/e/etc/enroot\"\n"
		"        config::init <(sed -n '/^#/s/#//p' \"${conf}\") true; config::fini\n";

	(void)state;
	assert_int_equal(enroot_script_paths(script, conf, sizeof(conf), sys, sizeof(sys)), 0);
	assert_string_equal(conf, "/opt/e/etc/enroot/enroot.conf");
	assert_string_equal(sys, "/opt/e/etc/enroot");
	/* Not an enroot script, a path from a variable, no room: -1. */
	assert_int_equal(enroot_script_paths("#!/bin/sh\nexec true\n", conf, sizeof(conf), sys,
					     sizeof(sys)), -1);
	assert_int_equal(enroot_script_paths("config::init \"${X}/enroot.conf\"\n"
					     "config::export ENROOT_SYSCONF_PATH \"/e\"\n",
					     conf, sizeof(conf), sys, sizeof(sys)), -1);
	assert_int_equal(enroot_script_paths(script, conf, 8, sys, sizeof(sys)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_the_suffixes_enroot_reads_count),
		cmocka_unit_test(test_a_release_file_is_stock_under_its_own_name_only),
		cmocka_unit_test(test_conf_settings_that_change_a_container),
		cmocka_unit_test(test_env_settings_that_change_a_container),
		cmocka_unit_test(test_script_names_its_conf_and_system_directory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
