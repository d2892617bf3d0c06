/* Unit tests of the job's secret (runner/node/jobkey.c): the key file is
 * created once, private, and the same for every process that races to
 * create it; a file others could read or change is refused; the batch
 * parent's CTRUN_JOB_SECRET wins over the file; keys differ per purpose,
 * job and step. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jobkey.h"

static char dir[] = "/tmp/ctrun-test-jobkey.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Four processes race to create the same key file: one file, mode 0600,
 * and all four read the same key (link(2) never replaces the winner's). */
static void test_racing_creators_agree(void **state)
{
	char path[PATH_MAX];
	uint8_t keys[4][JOBKEY_LEN];
	int fds[4][2];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/race/ctrun/job.key", dir);
	for (int i = 0; i < 4; i++) {
		pid_t pid;

		assert_int_equal(pipe(fds[i]), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct err e = { 0 };
			uint8_t k[JOBKEY_LEN];

			if (jobkey_file(path, k, &e) < 0 || write(fds[i][1], k, sizeof(k)) != sizeof(k))
				_exit(1);
			_exit(0);
		}
		close(fds[i][1]);
	}
	for (int i = 0; i < 4; i++) {
		int status;

		assert_int_equal(read(fds[i][0], keys[i], JOBKEY_LEN), JOBKEY_LEN);
		close(fds[i][0]);
		assert_true(wait(&status) > 0);
		assert_int_equal(status, 0);
	}
	for (int i = 1; i < 4; i++)
		assert_memory_equal(keys[0], keys[i], JOBKEY_LEN);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, JOBKEY_LEN);
	{ /* and no temporary file left beside it */
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s/race/ctrun')\" = job.key", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* A key file group or others can read, or a symlink, is refused with a
 * message saying what to do. */
static void test_key_file_others_could_read_is_refused(void **state)
{
	char path[PATH_MAX], link_path[PATH_MAX];
	uint8_t k[JOBKEY_LEN];
	struct err e = { 0 };

	(void)state;
	snprintf(path, sizeof(path), "%s/loose/ctrun/job.key", dir);
	assert_int_equal(jobkey_file(path, k, &e), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(jobkey_file(path, k, &e), -1);
	assert_non_null(strstr(e.msg, "mode 0644"));
	assert_non_null(strstr(e.msg, "remove it and ctrun makes a new one"));
	assert_int_equal(chmod(path, 0600), 0);
	snprintf(link_path, sizeof(link_path), "%s/loose/ctrun/link.key", dir);
	assert_int_equal(symlink(path, link_path), 0);
	memset(&e, 0, sizeof(e));
	assert_int_equal(jobkey_file(link_path, k, &e), -1);
	assert_non_null(strstr(e.msg, "symlink"));
}

/* CTRUN_JOB_SECRET (set by the batch-mode parent) is the secret; without
 * it, the file under XDG_CONFIG_HOME; a malformed one is a usage error. */
static void test_secret_from_env_or_xdg_file(void **state)
{
	char xdg[PATH_MAX], path[PATH_MAX], hex[JOBKEY_HEX_LEN + 1];
	uint8_t s[JOBKEY_LEN], f[JOBKEY_LEN], want[JOBKEY_LEN] = { 7, 7, 7 };
	char *env_hex[] = { NULL, NULL }, *env_bad[] = { "CTRUN_JOB_SECRET=abc", NULL };
	char *env_none[] = { NULL };
	char line[128];
	struct err e = { 0 };

	(void)state;
	jobkey_to_hex(want, hex);
	snprintf(line, sizeof(line), "CTRUN_JOB_SECRET=%s", hex);
	env_hex[0] = line;
	assert_int_equal(jobkey_secret(env_hex, s, &e), 0);
	assert_memory_equal(s, want, JOBKEY_LEN);
	assert_int_equal(jobkey_secret(env_bad, s, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
	assert_int_equal(setenv("XDG_CONFIG_HOME", xdg, 1), 0);
	assert_int_equal(jobkey_path(path, sizeof(path), &e), 0);
	snprintf(line, sizeof(line), "%s/ctrun/job.key", xdg);
	assert_string_equal(path, line);
	assert_int_equal(jobkey_secret(env_none, s, &e), 0);
	assert_int_equal(jobkey_file(path, f, &e), 0);
	assert_memory_equal(s, f, JOBKEY_LEN);
	unsetenv("XDG_CONFIG_HOME");
}

/* A key leaked from one step (a worker's environment) opens neither
 * another step nor the other purpose. */
static void test_derived_keys_differ_per_purpose_job_and_step(void **state)
{
	uint8_t secret[JOBKEY_LEN] = { 1 }, a[JOBKEY_LEN], b[JOBKEY_LEN];

	(void)state;
	jobkey_derive(secret, "rdzv", "77", "0", a);
	jobkey_derive(secret, "rdzv", "77", "0", b);
	assert_true(jobkey_equal(a, b));
	jobkey_derive(secret, "rdzv", "77", "1", b);
	assert_false(jobkey_equal(a, b));
	jobkey_derive(secret, "timings", "77", "0", b);
	assert_false(jobkey_equal(a, b));
	jobkey_derive(secret, "rdzv", "770", "", b); /* no ambiguity at the separator */
	assert_false(jobkey_equal(a, b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_racing_creators_agree),
		cmocka_unit_test(test_key_file_others_could_read_is_refused),
		cmocka_unit_test(test_secret_from_env_or_xdg_file),
		cmocka_unit_test(test_derived_keys_differ_per_purpose_job_and_step),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
