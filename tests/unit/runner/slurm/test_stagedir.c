/* Unit tests: the names of the per-job stage directories, the squeue answer
 * that says which jobs still live, and the directory rules: what another
 * user put at the name is refused and never removed. */
#include <fcntl.h>
#include <sys/stat.h>

#include "ctrtest.h"
#include "stagedir.h"
#include "step.h"
#include "strv.h"

static void test_a_fresh_name_parses_back_to_its_uid_and_job(void **state)
{
	char name[128], job[32];
	struct err e = { 0 };
	uid_t uid;

	(void)state;
	assert_int_equal(stagedir_name(name, sizeof(name), 1234, "98765", &e), 0);
	assert_int_equal(strncmp(name, "ctrun-stage.1234.98765.", 23), 0);
	assert_int_equal(strlen(name), 23 + 16);
	assert_true(stagedir_name_parse(name, &uid, job, sizeof(job)));
	assert_int_equal(uid, 1234);
	assert_string_equal(job, "98765");
}

static void test_two_names_of_one_job_differ(void **state)
{
	char a[128], b[128];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(stagedir_name(a, sizeof(a), 0, "7", &e), 0);
	assert_int_equal(stagedir_name(b, sizeof(b), 0, "7", &e), 0);
	assert_string_not_equal(a, b);
}

static void test_a_job_id_that_is_not_a_number_makes_no_name(void **state)
{
	char name[128];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(stagedir_name(name, sizeof(name), 0, "12_3", &e), -1);
	assert_int_equal(stagedir_name(name, sizeof(name), 0, "../x", &e), -1);
	assert_int_equal(stagedir_name(name, 20, 0, "12", &e), -1);
}

static void test_other_names_are_not_stage_directories(void **state)
{
	static const char *const bad[] = {
		"ctrun-stage.0.12.bb.sqsh",                 /* the old per-file name */
		"ctrun-stage.0.12",                         /* no random part */
		"ctrun-stage.0.12.0123456789abcdeF",        /* upper case */
		"ctrun-stage.0.12.0123456789abcdef0",       /* 17 digits */
		"ctrun-stage.0.12.0123456789abcde",         /* 15 digits */
		"ctrun-stage..12.0123456789abcdef",         /* no uid */
		"ctrun-stage.-1.12.0123456789abcdef",       /* a sign */
		"ctrun-stage.0..0123456789abcdef",          /* no job */
		"ctrun-stage.0.1/2.0123456789abcdef",       /* a slash */
		"ctrun-stage.99999999999.12.0123456789abcdef", /* uid too long */
		"ctrun-stage.4294967295.12.0123456789abcdef",  /* (uid_t)-1 */
		"xctrun-stage.0.12.0123456789abcdef",
		"",
	};
	char job[32];
	uid_t uid;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_false(stagedir_name_parse(bad[i], &uid, job, sizeof(job)));
	/* A job id longer than the caller's buffer is refused, not cut. */
	assert_false(stagedir_name_parse("ctrun-stage.0.123456.0123456789abcdef", &uid, job, 4));
}

static void test_squeue_lists_live_jobs_and_drops_ended_ones(void **state)
{
	struct strv live = { 0 };

	(void)state;
	assert_int_equal(squeue_live_jobs_parse("  12 RUNNING\n13 COMPLETED\n14 PENDING\n"
						"15 CANCELLED\n16 TIMEOUT\n17 SUSPENDED\n"
						"18 COMPLETING\n19 FAILED\n20 SOME_NEW_STATE\n\n",
						&live), 0);
	assert_int_equal(live.n, 5);
	assert_string_equal(live.v[0], "12");
	assert_string_equal(live.v[1], "14");
	assert_string_equal(live.v[2], "17");
	assert_string_equal(live.v[3], "18");
	assert_string_equal(live.v[4], "20"); /* unknown: kept, as if live */
	strv_free(&live);
	assert_int_equal(squeue_live_jobs_parse("", &live), 0);
	assert_int_equal(live.n, 0);
}

static void test_an_squeue_answer_not_understood_is_refused(void **state)
{
	struct strv live = { 0 };

	(void)state;
	/* An error text or another format: nothing is known, nothing is ended. */
	assert_int_equal(squeue_live_jobs_parse("slurm_load_jobs error: Unable to contact\n", &live),
			 -1);
	strv_free(&live);
	assert_int_equal(squeue_live_jobs_parse("12_3 RUNNING\n", &live), -1);
	strv_free(&live);
	assert_int_equal(squeue_live_jobs_parse("12\n", &live), -1);
	strv_free(&live);
}

/* The directory tests' fixture: a scratch directory (removed after each
 * test with all in it, passed or not) holding top, the shared stage
 * directory (sticky and writable by all, as /tmp), and bin, for a fake squeue. */
static char top[PATH_MAX], bin[PATH_MAX];
static const char name[] = "ctrun-stage.0.42.0123456789abcdef";

static int dir_setup(void **state)
{
	struct tmpdir *td;

	if (tmpdir_setup(state) != 0)
		return -1;
	td = *state;
	snprintf(top, sizeof(top), "%s", tmpdir_path(td, "top"));
	snprintf(bin, sizeof(bin), "%s", tmpdir_path(td, "bin"));
	if (mkdir(top, 0755) != 0 || chmod(top, 01777) != 0 || mkdir(bin, 0755) != 0)
		return -1;
	return 0;
}

static void path_of(char *buf, size_t size, const char *leaf)
{
	snprintf(buf, size, "%s/%s", top, leaf);
}

static void test_prepare_makes_a_private_directory(void **state)
{
	struct err e = { 0 };
	bool found;
	struct stat st;
	char p[128];

	(void)state;
	assert_int_equal(stagedir_prepare(top, name, &found, &e), 0);
	assert_false(found);
	path_of(p, sizeof(p), name);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	/* Again, as another node that sees the same stage directory: it is
	 * ours, fine, and found there (the nodes share it: nothing to stage). */
	assert_int_equal(stagedir_prepare(top, name, &found, &e), 0);
	assert_true(found);
	assert_int_equal(stagedir_remove(top, name, &e), 0);
	assert_int_equal(lstat(p, &st), -1);
}

static void test_prepare_refuses_what_another_user_put_at_the_name(void **state)
{
	struct err e = { 0 };
	bool found;
	char p[128], target[128];
	struct stat st;

	(void)state;
	assert_int_equal(geteuid(), 0); /* make check runs as root */
	path_of(p, sizeof(p), name);
	path_of(target, sizeof(target), "victim");
	/* A directory of someone else's, even mode 0700. */
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(stagedir_prepare(top, name, &found, &e), -1);
	assert_non_null(strstr(e.msg, "staging refused"));
	/* remove leaves it alone: not ours. */
	assert_int_equal(stagedir_remove(top, name, &e), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(rmdir(p), 0);
	/* A directory of ours that others may enter. */
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(stagedir_prepare(top, name, &found, &e), -1);
	assert_int_equal(stagedir_remove(top, name, &e), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(rmdir(p), 0);
	/* A file, and someone else's symlink to a directory of ours. */
	assert_int_equal(close(creat(p, 0600)), 0);
	assert_int_equal(stagedir_prepare(top, name, &found, &e), -1);
	assert_int_equal(stagedir_remove(top, name, &e), 0);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(lchown(p, 65534, 65534), 0);
	assert_int_equal(stagedir_prepare(top, name, &found, &e), -1);
	assert_int_equal(stagedir_remove(top, name, &e), 0);
	assert_int_equal(lstat(target, &st), 0); /* not followed */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(rmdir(target), 0);
}

static void test_prepare_refuses_a_stage_dir_others_may_rename_in(void **state)
{
	struct err e = { 0 };
	bool found;

	(void)state;
	assert_int_equal(chmod(top, 0777), 0);
	assert_int_equal(stagedir_prepare(top, name, &found, &e), -1);
	assert_non_null(strstr(e.msg, "sticky"));
	assert_int_equal(chmod(top, 01777), 0);
	assert_int_equal(stagedir_prepare("/nonexistent-ctrun-stage", name, &found, &e), -1);
}

/* A fake squeue first on PATH that prints $FAKE_SQUEUE: Slurm's answer. */

static void fake_squeue(const char *answer)
{
	char p[PATH_MAX + 8];
	FILE *f;

	snprintf(p, sizeof(p), "%s/squeue", bin);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nprintf \"$FAKE_SQUEUE\"\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(setenv("PATH", bin, 1), 0);
	assert_int_equal(setenv("FAKE_SQUEUE", answer, 1), 0);
}

static void make_copy(const char *leaf)
{
	char p[192];

	path_of(p, sizeof(p), leaf);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/img.sqsh");
	assert_int_equal(close(creat(p, 0600)), 0);
	assert_int_equal(truncate(p, 1000), 0);
}

static bool exists(const char *leaf)
{
	char p[128];
	struct stat st;

	path_of(p, sizeof(p), leaf);
	return lstat(p, &st) == 0;
}

static void test_gc_removes_the_callers_copies_of_ended_jobs_only(void **state)
{
	static const char live[] = "ctrun-stage.0.50.00000000000000aa";
	static const char ended[] = "ctrun-stage.0.51.00000000000000bb";
	static const char gone[] = "ctrun-stage.0.52.00000000000000cc";
	static const char theirs[] = "ctrun-stage.65534.53.00000000000000dd";
	unsigned long long bytes;
	struct err e = { 0 };
	size_t removed;
	char p[128];

	(void)state;
	make_copy(live);
	make_copy(ended);
	make_copy(gone);
	make_copy(theirs);
	path_of(p, sizeof(p), theirs);
	assert_int_equal(chown(p, 65534, 65534), 0);
	/* Slurm cannot be asked: nothing is known, nothing removed. */
	assert_int_equal(setenv("PATH", "/nonexistent", 1), 0);
	assert_int_equal(stagedir_gc(top, &removed, &bytes, &e), 0);
	assert_int_equal(removed, 0);
	/* 50 runs, 51 is cancelled, 52 Slurm no longer knows. */
	fake_squeue("50 RUNNING\n51 CANCELLED\n");
	assert_int_equal(stagedir_gc(top, &removed, &bytes, &e), 0);
	assert_int_equal(removed, 2);
	assert_int_equal(bytes, 2000);
	assert_true(exists(live));
	assert_false(exists(ended));
	assert_false(exists(gone));
	assert_true(exists(theirs));
	/* The job's own clean-up step. */
	assert_int_equal(stagedir_remove(top, live, &e), 0);
	assert_false(exists(live));
}

int main(void)
{
	/* No real squeue: stagedir_prepare asks Slurm about stale copies. */
	setenv("PATH", "/nonexistent", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_fresh_name_parses_back_to_its_uid_and_job),
		cmocka_unit_test(test_two_names_of_one_job_differ),
		cmocka_unit_test(test_a_job_id_that_is_not_a_number_makes_no_name),
		cmocka_unit_test(test_other_names_are_not_stage_directories),
		cmocka_unit_test(test_squeue_lists_live_jobs_and_drops_ended_ones),
		cmocka_unit_test(test_an_squeue_answer_not_understood_is_refused),
		cmocka_unit_test_setup_teardown(test_prepare_makes_a_private_directory, dir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_prepare_refuses_what_another_user_put_at_the_name, dir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_prepare_refuses_a_stage_dir_others_may_rename_in, dir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_gc_removes_the_callers_copies_of_ended_jobs_only, dir_setup, tmpdir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
