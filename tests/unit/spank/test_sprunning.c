/* Unit tests of the node's records of running containers (spank/sprunning.c)
 * in a directory standing for /run: root's directories and records that a
 * job user can neither write nor fill, /run's own mode never changed, an
 * earlier layout's user-owned directory replaced, stale records removed,
 * the bounds on a record's size and a user's count. */
#include <dirent.h>
#include <sys/mman.h>
#include <sys/file.h>

#include "ctrtest.h"
#include "sprunning.h"

#define OTHER_UID 64201u

static const char *run_dir(void **state)
{
	return tmpdir_path(*state, "run");
}

/* The user's directory, as sp_running_dir names it under the test's /run. */
static const char *udir(void **state, uid_t uid)
{
	static char dir[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(sp_running_dir(uid, dir, sizeof(dir), &e), 0);
	return dir;
}

static int setup(void **state)
{
	static char parent[PATH_MAX];

	if (tmpdir_setup(state) != 0)
		return -1;
	snprintf(parent, sizeof(parent), "%s", tmpdir_path(*state, "run"));
	if (mkdir(parent, 0711) < 0)
		return -1;
	sp_running_use_parent(parent);
	return 0;
}

static int teardown(void **state)
{
	sp_running_use_parent("/run");
	return tmpdir_teardown(state);
}

static struct sp_running live_record(void)
{
	struct sp_running r = { .pid = getpid(), .start = sp_running_starttime(getpid()),
				.cwd = "/w" };

	return r;
}

static void assert_root_dir(const char *path, mode_t mode)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, mode);
}

static void test_directories_are_roots_and_run_is_untouched(void **state)
{
	struct err e = { 0 };
	char path[PATH_MAX];
	struct stat st;

	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(1000, &e), 0);
	assert_int_equal(stat(run_dir(state), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	snprintf(path, sizeof(path), "%s/ctrun-spank", run_dir(state));
	assert_root_dir(path, 0755);
	assert_root_dir(udir(state, 1000), 0700);
	*strrchr(strcpy(path, udir(state, 1000)), '/') = '\0';
	assert_root_dir(path, 0755);
}

/* The user's own directory of an earlier ctrun (the user could write it):
 * emptied without following a link, made anew as root's. */
static void test_an_earlier_users_directory_is_replaced(void **state)
{
	struct err e = { 0 };
	char path[PATH_MAX], victim[PATH_MAX];

	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(OTHER_UID, &e), 0);
	assert_int_equal(rmdir(udir(state, OTHER_UID)), 0);
	assert_int_equal(mkdir(udir(state, OTHER_UID), 0700), 0);
	assert_int_equal(chown(udir(state, OTHER_UID), OTHER_UID, OTHER_UID), 0);
	snprintf(victim, sizeof(victim), "%s", tmpdir_path(*state, "victim"));
	assert_int_equal(mkdir(victim, 0755), 0);
	snprintf(path, sizeof(path), "%s/victim/keep", tmpdir_path(*state, ""));
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	snprintf(path, sizeof(path), "%s/link", udir(state, OTHER_UID));
	assert_int_equal(symlink(victim, path), 0);
	snprintf(path, sizeof(path), "%s/filler", udir(state, OTHER_UID));
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	assert_int_equal(sp_running_prepare(OTHER_UID, &e), 0);
	assert_root_dir(udir(state, OTHER_UID), 0700);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/victim/keep", tmpdir_path(*state, ""));
	assert_int_equal(access(path, F_OK), 0);
}

static void test_publish_lookup_unpublish(void **state)
{
	struct sp_running r = live_record(), back;
	struct err e = { 0 };
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(1000, &e), 0);
	fd = sp_running_publish(1000, "job.7", &r, &e);
	assert_true(fd >= 0);
	snprintf(path, sizeof(path), "%s/job.7", udir(state, 1000));
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(sp_running_lookup(1000, "job.7", &back, &e), 1);
	assert_string_equal(back.cwd, "/w");
	sp_running_free(&back);
	/* Another live hold of the name is not replaced. */
	assert_int_equal(sp_running_publish(1000, "job.7", &r, &e), -1);
	assert_non_null(strstr(e.msg, "is running on this node"));
	/* Another user's directory does not have it. */
	assert_int_equal(sp_running_lookup(1001, "job.7", &back, &e), 0);
	sp_running_unpublish(1000, "job.7", fd);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(sp_running_lookup(1000, "job.7", &back, &e), 0);
	/* Names that are no file's. */
	assert_int_equal(sp_running_publish(1000, "../x", &r, &e), -1);
	assert_int_equal(sp_running_publish(1000, ".hidden", &r, &e), -1);
}

/* A step that died (its slurmstepd killed: the lock gone, the file left):
 * not running, and removed by the node's next step. */
static void test_stale_records_go_at_the_next_step(void **state)
{
	struct sp_running r = live_record(), back;
	struct err e = { 0 };
	char path[PATH_MAX], other[PATH_MAX];
	int fd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(1000, &e), 0);
	assert_int_equal(sp_running_prepare(OTHER_UID, &e), 0);
	fd = sp_running_publish(1000, "dead", &r, &e);
	assert_true(fd >= 0);
	close(fd);
	fd = sp_running_publish(OTHER_UID, "alive", &r, &e);
	assert_true(fd >= 0);
	snprintf(path, sizeof(path), "%s/dead", udir(state, 1000));
	snprintf(other, sizeof(other), "%s/alive", udir(state, OTHER_UID));
	assert_int_equal(sp_running_lookup(1000, "dead", &back, &e), 0);
	assert_int_equal(access(path, F_OK), 0);
	/* Another user's next step on the node. */
	assert_int_equal(sp_running_prepare(1001, &e), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);
	/* Its directory stays, root's (a step about to publish needs it). */
	assert_root_dir(udir(state, 1000), 0700);
	sp_running_unpublish(OTHER_UID, "alive", fd);
}

/* A user's records on a node are bounded in count and size. */
static void test_bounded_in_count_and_size(void **state)
{
	struct sp_running r = live_record();
	struct err e = { 0 };
	int fds[SP_RUNNING_RECORDS];
	char name[32], *big;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(1000, &e), 0);
	for (unsigned i = 0; i < SP_RUNNING_RECORDS; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		fds[i] = sp_running_publish(1000, name, &r, &e);
		assert_true(fds[i] >= 0);
	}
	assert_int_equal(sp_running_publish(1000, "one-more", &r, &e), -1);
	assert_non_null(strstr(e.msg, "cannot be joined by name"));
	for (unsigned i = 0; i < SP_RUNNING_RECORDS; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		sp_running_unpublish(1000, name, fds[i]);
	}
	big = malloc(SP_RUNNING_MAX);
	assert_non_null(big);
	memset(big, 'x', SP_RUNNING_MAX - 1);
	big[SP_RUNNING_MAX - 1] = '\0';
	assert_int_equal(strv_push(&r.set, big), 0);
	assert_int_equal(sp_running_publish(1000, "big", &r, &e), -1);
	assert_non_null(strstr(e.msg, "over"));
	strv_free(&r.set);
	free(big);
}

/* A record that is not root's (planted by another way in) is refused. */
static void test_a_record_not_roots_is_refused(void **state)
{
	struct sp_running back;
	struct err e = { 0 };
	char path[PATH_MAX];
	int fd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(sp_running_prepare(1000, &e), 0);
	snprintf(path, sizeof(path), "%s/planted", udir(state, 1000));
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 1000, 1000), 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(sp_running_lookup(1000, "planted", &back, &e), -1);
	assert_non_null(strstr(e.msg, "not root's"));
	close(fd);
}

/* A record is read as the bytes it has: one that ends at a page nobody may
 * read, with no NUL after it, is parsed (or refused) without a byte past
 * its end (sscanf over it read to the next NUL: fuzz_spank's crash). */
static void parse_at_a_guard_page(const char *rec, size_t len, int want)
{
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sp_running r;
	struct err e = { 0 };

	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	memcpy(map + page - len, rec, len);
	assert_int_equal(sp_running_parse(map + page - len, len, &r, &e), want);
	if (want == 0) {
		assert_int_equal(r.pid, 4242);
		assert_string_equal(r.cwd, "/w");
		sp_running_free(&r);
	}
	munmap(map, (size_t)page * 2);
}

#define GUARDED(lit, want) parse_at_a_guard_page(lit, sizeof(lit) - 1, want)

static void test_a_record_is_read_within_its_bytes(void **state)
{
	(void)state;
	GUARDED("ctrun-spank-reg 1 4242 17\n/w\0\0\0", 0);
	GUARDED("ctrun-spank-reg 1 4242 17\n", -1);
	GUARDED("ctrun-spank-reg 1 42", -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_directories_are_roots_and_run_is_untouched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_earlier_users_directory_is_replaced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_publish_lookup_unpublish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_records_go_at_the_next_step, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bounded_in_count_and_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_record_not_roots_is_refused, setup, teardown),
		cmocka_unit_test(test_a_record_is_read_within_its_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
