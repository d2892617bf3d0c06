/* Unit tests of the job records and pull claims in the image store
 * (registry/claim.c) and of the store's tag records (registry/store.c)
 * against what another user of a group store can leave at their names:
 * an earlier run's record, another user's file, a FIFO, a folder. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include "ctrtest.h"
#include "claim.h"
#include "ref.h"
#include "store.h"
#include "util.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define REF "docker://reg.example:5000/team/app:latest"

/* A wait that blocks is a failure, not a hang of the suite: SIGALRM's
 * default action ends the test program. */
#define GUARD_S 30

static struct job_record run_of(const char *restart, const char *node)
{
	struct job_run r = { .cluster = "c1", .job = "4242", .step = "0", .restart = restart,
			     .node = node };
	struct job_record rec;

	assert_int_equal(job_record_of(&r, REF, &rec), 0);
	return rec;
}

static const char *store_of(struct tmpdir *td)
{
	struct err e = { 0 };
	const char *s = tmpdir_path(td, "store");

	assert_int_equal(store_init(s, &e), 0);
	return s;
}

static void test_record_name_is_the_same_in_every_run_of_a_step(void **state)
{
	struct job_record first = run_of(NULL, NULL), requeued = run_of("1", NULL);
	size_t n = strlen("4242.0-");

	(void)state;
	assert_string_equal(first.key, requeued.key);
	assert_memory_equal(first.key, "4242.0-", n);
	assert_int_equal(strspn(first.key + n, "0123456789abcdef"), 16);
	assert_int_equal(strlen(first.key), n + 16);
	/* ... and its text names the run. */
	assert_string_not_equal(first.run, requeued.run);
}

static void test_node_local_store_has_a_record_per_node(void **state)
{
	struct job_record a = run_of(NULL, "n1"), b = run_of(NULL, "n2"), any = run_of(NULL, NULL);

	(void)state;
	assert_string_not_equal(a.key, b.key);
	assert_string_not_equal(a.key, any.key);
	assert_string_not_equal(a.run, b.run);
}

static void test_record_fields_must_be_plain(void **state)
{
	static const struct job_run bad[] = {
		{ .job = "42;rm", .step = "0" },
		{ .job = "42", .step = "-5" },
		{ .job = "", .step = "0" },
		{ .job = "42", .step = NULL },
		{ .job = "42", .step = "0", .restart = "1 " },
		{ .job = "42", .step = "0", .start = "17000\n" },
		{ .job = "42", .step = "0", .cluster = "a/b" },
		{ .job = "42", .step = "0", .node = "n1\nrun" },
	};
	struct job_run ok = { .job = "42", .step = "0" };
	struct job_record rec;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(job_record_of(&bad[i], REF, &rec), -1);
	assert_int_equal(job_record_of(&ok, REF, &rec), 0);
	assert_int_equal(job_record_of(&ok, REF "\nrun c1 42.0", &rec), -1);
}

static void test_an_earlier_runs_record_says_nothing_to_this_run(void **state)
{
	struct job_record first = run_of(NULL, NULL), requeued = run_of("1", NULL);
	char text[JOB_TEXT_MAX], out[1100];

	(void)state;
	assert_int_equal(job_record_format(&first, "sha256:" HEX64, text, sizeof(text)), 0);
	assert_int_equal(job_record_parse(&requeued, text, out, sizeof(out)), 0);
	assert_int_equal(job_record_parse(&first, text, out, sizeof(out)), 1);
	assert_string_equal(out, "sha256:" HEX64);
	/* The error of the earlier run fails only that run. */
	assert_int_equal(job_record_format(&first, "!registry said 404", text, sizeof(text)), 0);
	assert_int_equal(job_record_parse(&requeued, text, out, sizeof(out)), 0);
	assert_int_equal(job_record_parse(&first, text, out, sizeof(out)), 2);
	assert_string_equal(out, "registry said 404");
}

static void test_record_text_is_the_run_and_one_result_line(void **state)
{
	struct job_record r = run_of(NULL, NULL);
	char text[JOB_TEXT_MAX], out[1100];

	(void)state;
	snprintf(text, sizeof(text), "%ssha256:%s\nsha256:%s\n", r.run, HEX64, HEX64B);
	assert_int_equal(job_record_parse(&r, text, out, sizeof(out)), 0);
	snprintf(text, sizeof(text), "%ssha256:%s", r.run, HEX64);
	assert_int_equal(job_record_parse(&r, text, out, sizeof(out)), 0);
	snprintf(text, sizeof(text), "%ssha256:../../x\n", r.run);
	assert_int_equal(job_record_parse(&r, text, out, sizeof(out)), 0);
	assert_int_equal(job_record_parse(&r, "sha256:" HEX64 "\n", out, sizeof(out)), 0);
}

/* A FIFO at the record's name (anyone in a group store can make one):
 * the wait does not block on it, and task 0's record replaces it. */
static void test_wait_is_not_stalled_by_a_fifo_at_the_record(void **state)
{
	struct job_record r = run_of(NULL, NULL);
	const char *store = store_of(*state);
	char path[PATH_MAX], d[80];
	struct err e = { 0 };

	snprintf(path, sizeof(path), "%s/jobs/%s", store, r.key);
	assert_int_equal(mkfifo(path, 0666), 0);
	alarm(GUARD_S);
	assert_int_equal(job_record_wait(store, &r, 1, true, d, sizeof(d), &e), -1);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
	assert_int_equal(job_record_write(store, &r, "sha256:" HEX64, &e), 0);
	assert_int_equal(job_record_wait(store, &r, 1, true, d, sizeof(d), &e), 0);
	assert_string_equal(d, "sha256:" HEX64);
}

/* A requeued job keeps its id: the earlier run's error record neither
 * fails the new run nor stands for it; the new run's record does. */
static void test_wait_ignores_an_earlier_runs_error(void **state)
{
	struct job_record first = run_of(NULL, NULL), requeued = run_of("1", NULL);
	const char *store = store_of(*state);
	struct err e = { 0 };
	char d[1100];

	assert_int_equal(job_record_write(store, &first, "!manifest unknown", &e), 0);
	assert_int_equal(job_record_wait(store, &requeued, 1, true, d, sizeof(d), &e), -1);
	assert_null(strstr(e.msg, "could not pull"));
	assert_non_null(strstr(e.msg, "another run"));
	assert_int_equal(job_record_write(store, &requeued, "sha256:" HEX64B, &e), 0);
	assert_int_equal(job_record_wait(store, &requeued, 1, true, d, sizeof(d), &e), 0);
	assert_string_equal(d, "sha256:" HEX64B);
}

/* Task 0's error, however long, reaches a task that waits with room for a
 * digest only (as pull.c's does): at once, not after [registry] wait. */
static void test_wait_takes_a_long_error_at_once(void **state)
{
	struct job_record r = run_of(NULL, NULL);
	const char *store = store_of(*state);
	char why[600], d[80];
	struct err e = { 0 };

	memset(why, 'x', sizeof(why) - 1);
	why[0] = '!';
	why[sizeof(why) - 1] = '\0';
	assert_int_equal(job_record_write(store, &r, why, &e), 0);
	assert_int_equal(job_record_wait(store, &r, 5, true, d, sizeof(d), &e), -1);
	assert_non_null(strstr(e.msg, "could not pull the image: xxxx"));
	assert_null(strstr(e.msg, "gave up"));
}

/* Another user's file at the name, with the very text this run expects:
 * ignored (only root can make one here, so only root runs it). */
static void test_wait_ignores_another_users_record(void **state)
{
	struct job_record r = run_of(NULL, NULL);
	const char *store = store_of(*state);
	char path[PATH_MAX], d[80];
	struct err e = { 0 };

	if (geteuid() != 0)
		skip();
	assert_int_equal(job_record_write(store, &r, "sha256:" HEX64, &e), 0);
	snprintf(path, sizeof(path), "%s/jobs/%s", store, r.key);
	assert_int_equal(chown(path, 4242, 4242), 0);
	assert_int_equal(job_record_wait(store, &r, 1, true, d, sizeof(d), &e), -1);
	assert_non_null(strstr(e.msg, "uid 4242"));
}

/* A folder planted at the name does not keep task 0 from writing. */
static void test_write_replaces_a_folder_at_the_record(void **state)
{
	struct job_record r = run_of(NULL, NULL);
	const char *store = store_of(*state);
	char path[PATH_MAX], d[80];
	struct err e = { 0 };
	struct stat st;

	snprintf(path, sizeof(path), "%s/jobs/%s/inside", store, r.key);
	assert_int_equal(mkdir_p(path, 0700), 0);
	assert_int_equal(job_record_write(store, &r, "sha256:" HEX64, &e), 0);
	assert_int_equal(job_record_wait(store, &r, 1, true, d, sizeof(d), &e), 0);
	assert_string_equal(d, "sha256:" HEX64);
	/* The record is this user's alone (it names what its tasks run). */
	snprintf(path, sizeof(path), "%s/jobs/%s", store, r.key);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
}

static void test_sweep_removes_records_of_runs_long_over(void **state)
{
	struct job_record old = run_of(NULL, NULL), now = run_of(NULL, "n1");
	const char *store = store_of(*state);
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT } };
	char path[PATH_MAX];
	struct err e = { 0 };

	assert_int_equal(job_record_write(store, &old, "sha256:" HEX64, &e), 0);
	assert_int_equal(job_record_write(store, &now, "sha256:" HEX64, &e), 0);
	snprintf(path, sizeof(path), "%s/jobs/%s", store, old.key);
	t[1].tv_sec = time(NULL) - JOB_RECORD_TTL_S - 60;
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
	job_records_sweep(store);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/jobs/%s", store, now.key);
	assert_int_equal(access(path, F_OK), 0);
}

/* A FIFO at a pull's claim is nobody's claim: taken over at once. */
static void test_fifo_at_a_claim_is_nobodys_claim(void **state)
{
	const char *store = store_of(*state);
	char path[PATH_MAX], image[PATH_MAX];
	struct err e = { 0 };
	struct claim c;

	snprintf(path, sizeof(path), "%s/tmp/%s.claim", store, HEX64);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(store_image(store, "sha256:" HEX64, image, sizeof(image), &e), 0);
	alarm(GUARD_S);
	assert_int_equal(claim_take(store, "sha256:" HEX64, image, 5, true, &c, &e), 1);
	alarm(0);
	claim_release(&c);
}

/* ... and at a tag's record (ctrun cache list and offline runs read
 * these): refused at once, no wait. */
static void test_fifo_at_a_tag_record_is_refused_at_once(void **state)
{
	const char *store = store_of(*state);
	char path[PATH_MAX], d[80];
	struct image_ref r;
	struct err e = { 0 };

	assert_int_equal(ref_parse(REF, &r, &e), 0);
	snprintf(path, sizeof(path), "%s/refs/%s/%s", store, r.host, r.repo);
	assert_int_equal(mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/refs/%s/%s/%s", store, r.host, r.repo, r.tag);
	assert_int_equal(mkfifo(path, 0666), 0);
	alarm(GUARD_S);
	assert_int_equal(store_ref_read(store, &r, d, sizeof(d), &e), -1);
	alarm(0);
	assert_non_null(strstr(e.msg, "not a regular file"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, tmpdir_setup, tmpdir_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_name_is_the_same_in_every_run_of_a_step),
		cmocka_unit_test(test_node_local_store_has_a_record_per_node),
		cmocka_unit_test(test_record_fields_must_be_plain),
		cmocka_unit_test(test_an_earlier_runs_record_says_nothing_to_this_run),
		cmocka_unit_test(test_record_text_is_the_run_and_one_result_line),
		T(test_wait_is_not_stalled_by_a_fifo_at_the_record),
		T(test_wait_ignores_an_earlier_runs_error),
		T(test_wait_takes_a_long_error_at_once),
		T(test_wait_ignores_another_users_record),
		T(test_write_replaces_a_folder_at_the_record),
		T(test_sweep_removes_records_of_runs_long_over),
		T(test_fifo_at_a_claim_is_nobodys_claim),
		T(test_fifo_at_a_tag_record_is_refused_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
