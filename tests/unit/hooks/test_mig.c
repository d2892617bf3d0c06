/* Unit tests: MIG devices as ctrun-hook reads them from the driver's files
 * (/proc/devices, mig-minors) and from a request, and
 * the masked /proc/driver/nvidia's params.  The files' texts are the
 * formats libnvidia-container and nvidia-container-toolkit read
 * (internal/nvcaps/nvcaps.go, src/nvc_mount.c), written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "mig.h"
#include "procfs.h"
#include "select.h"

static const char proc_devices[] =
	"Character devices:\n"
	"  1 mem\n"
	"195 nvidia-frontend\n"
	"234 nvidia-caps-imex-channels\n"
	"235 nvidia-caps\n"
	"510 nvidia-uvm\n"
	"\n"
	"Block devices:\n"
	"236 nvidia-caps\n";

static void test_chardev_major_from_proc_devices(void **state)
{
	(void)state;
	assert_int_equal(hook_chardev_major(proc_devices, "nvidia-caps"), 235);
	assert_int_equal(hook_chardev_major(proc_devices, "nvidia-caps-imex-channels"), 234);
	assert_int_equal(hook_chardev_major(proc_devices, "nvidia-uvm"), 510);
	assert_int_equal(hook_chardev_major(proc_devices, "nvidia"), -1);
	assert_int_equal(hook_chardev_major("", "nvidia-caps"), -1);
	/* A block device of that name is not the character device. */
	assert_int_equal(hook_chardev_major("Block devices:\n235 nvidia-caps\n", "nvidia-caps"), -1);
}

static void test_mig_minors_file(void **state)
{
	static struct hook_mig_minors m;
	struct err e = { 0 };
	const char text[] = "config 1\nmonitor 2\n"
			    "gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
			    "gpu0/gi2/access 21\ngpu0/gi2/ci0/access 22\n"
			    "gpu7/gi14/ci7/access 1001\n"
			    "garbage line\ngpu0/gi3/access x\ngpu0/gi1/ci0/accessX 9\n";

	(void)state;
	assert_int_equal(hook_mig_minors_parse(text, &m, &e), 0);
	assert_int_equal(m.n, 7);
	assert_int_equal(hook_mig_minor(&m, 0, 1, -1), 12);
	assert_int_equal(hook_mig_minor(&m, 0, 1, 0), 13);
	assert_int_equal(hook_mig_minor(&m, 0, 2, 0), 22);
	assert_int_equal(hook_mig_minor(&m, 7, 14, 7), 1001);
	assert_int_equal(hook_mig_minor(&m, -1, -1, -1), 1); /* config: the first global */
	assert_int_equal(hook_mig_minor(&m, 0, 3, -1), -1);
	assert_int_equal(hook_mig_minor(&m, 1, 1, -1), -1);
}

static void test_mig_ids(void **state)
{
	(void)state;
	assert_true(hook_is_mig_id("MIG-4f3b0b45-5e6e-5b2a-9b1e-6c2e7b8a9d10"));
	assert_true(hook_is_mig_id("MIG-GPU-aaaa0000-1111-2222-3333-444455556666/1/0"));
	assert_true(hook_is_mig_id("0:1"));
	assert_true(hook_is_mig_id("12:6"));
	assert_false(hook_is_mig_id("MIG-"));
	assert_false(hook_is_mig_id("MIG-x y"));
	assert_false(hook_is_mig_id("GPU-aaaa"));
	assert_false(hook_is_mig_id("3"));
	assert_false(hook_is_mig_id(":1"));
	assert_false(hook_is_mig_id("1:"));
	assert_false(hook_is_mig_id("a:1"));
}

static struct hook_mig_inv *two_gpus_with_migs(void)
{
	static struct hook_mig_inv inv;

	memset(&inv, 0, sizeof(inv));
	inv.v[0] = (struct hook_mig){ .parent = 0, .index = 0, .gi = 1, .ci = 0,
				      .uuid = "MIG-11111111-0000-0000-0000-000000000000" };
	inv.v[1] = (struct hook_mig){ .parent = 0, .index = 1, .gi = 2, .ci = 0,
				      .uuid = "MIG-22222222-0000-0000-0000-000000000000" };
	inv.v[2] = (struct hook_mig){ .parent = 3, .index = 0, .gi = 5, .ci = 1,
				      .uuid = "MIG-33333333-0000-0000-0000-000000000000" };
	inv.n = 3;
	return &inv;
}

static void test_mig_find_by_uuid_and_by_gpu_index(void **state)
{
	struct hook_mig_inv *inv = two_gpus_with_migs();
	struct hook_mig m;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(hook_mig_find(inv, "MIG-22222222-0000-0000-0000-000000000000", "X", &m,
				       &e), 0);
	assert_int_equal(m.gi, 2);
	assert_int_equal(hook_mig_find(inv, "3:0", "X", &m, &e), 0);
	assert_int_equal(m.parent, 3);
	assert_int_equal(m.ci, 1);
	assert_int_equal(hook_mig_find(inv, "0:2", "NVIDIA_VISIBLE_DEVICES", &m, &e), -1);
	assert_non_null(strstr(e.msg, "NVIDIA_VISIBLE_DEVICES names MIG device '0:2', which this "
				      "host does not have (3 MIG devices"));
	e = (struct err){ 0 };
	assert_int_equal(hook_mig_find(inv, "MIG-99", "X", &m, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

/* A choice that mixes whole GPUs and MIG devices is refused before NVML
 * is asked anything. */
static void test_mixing_gpus_and_mig_is_refused(void **state)
{
	static struct hook_gpu_inv inv;
	static struct hook_sel s;
	struct hook_gpu_choice c;
	struct err e = { 0 };

	(void)state;
	inv.n = 2;
	inv.v[0].minor = 0;
	inv.v[1].minor = 1;
	assert_int_equal(hook_gpus_choose("1,MIG-11111111-0000", NULL, NULL, &c, &e), 0);
	assert_int_equal(hook_select(&c, &inv, NULL, 0, "", &s, &e), -1);
	assert_non_null(strstr(e.msg, "mixes whole GPUs and MIG devices"));
	hook_gpu_choice_free(&c);
	/* MIG alone without NVML: the message says NVML is needed. */
	e = (struct err){ 0 };
	assert_int_equal(hook_gpus_choose("0:1", NULL, NULL, &c, &e), 0);
	assert_int_equal(hook_select(&c, &inv, NULL, 0, "", &s, &e), -1);
	assert_non_null(strstr(e.msg, "need NVML"));
	hook_gpu_choice_free(&c);
}

static void test_cuda_env_is_mig_uuids_for_mig(void **state)
{
	static struct hook_sel s;
	char buf[512];

	(void)state;
	s.n = 2;
	s.nmig = 0;
	assert_int_equal(hook_sel_cuda_env(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0,1");
	s.nmig = 2;
	strcpy(s.migs[0].uuid, "MIG-a");
	strcpy(s.migs[1].uuid, "MIG-b");
	assert_int_equal(hook_sel_cuda_env(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MIG-a,MIG-b");
	assert_int_equal(hook_sel_cuda_env(&s, buf, 6), -1);
}

static void test_params_lose_modify_device_files(void **state)
{
	char a[] = "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n";
	char b[] = "ModifyDeviceFiles: 1";
	char c[] = "XModifyDeviceFiles: 1\nModifyDeviceFiles: 10\n";

	(void)state;
	hook_procfs_params(a);
	assert_string_equal(a, "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n"
			       "DeviceFileUID: 0\n");
	hook_procfs_params(b);
	assert_string_equal(b, "ModifyDeviceFiles: 0");
	hook_procfs_params(c);
	assert_string_equal(c, "XModifyDeviceFiles: 1\nModifyDeviceFiles: 10\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chardev_major_from_proc_devices),
		cmocka_unit_test(test_mig_minors_file),
		cmocka_unit_test(test_mig_ids),
		cmocka_unit_test(test_mig_find_by_uuid_and_by_gpu_index),
		cmocka_unit_test(test_mixing_gpus_and_mig_is_refused),
		cmocka_unit_test(test_cuda_env_is_mig_uuids_for_mig),
		cmocka_unit_test(test_params_lose_modify_device_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
