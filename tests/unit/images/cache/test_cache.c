/* Unit tests: the node cache's identity, create-once publication, crash
 * recovery, and LRU gc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/cache.h"
#include "image.h"
#define CTRTEST_CACHE_FIXTURE
#define CTRTEST_ARCHIVES
#include "ctrtest.h"
#include "rootpath.h"

static void test_identity_is_stable_for_an_untouched_file(void **state)
{
	char a[CACHE_ID_MAX], b[CACHE_ID_MAX];

	(void)state;
	write_text(p(0, "img"), "one");
	id_of(p(0, "img"), a);
	id_of(p(0, "img"), b);
	assert_string_equal(a, b);
	assert_int_equal(strlen(a), 32);
}

static void test_identity_changes_when_the_file_is_modified_in_place(void **state)
{
	char a[CACHE_ID_MAX], b[CACHE_ID_MAX];
	struct stat st;
	struct timespec t[2];

	(void)state;
	write_text(p(0, "img"), "one");
	id_of(p(0, "img"), a);
	assert_int_equal(stat(p(0, "img"), &st), 0);
	write_text(p(0, "img"), "two"); /* same size, same inode */
	/* even with the old mtime put back (cp -p, touch -r): ctime moved */
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, p(0, "img"), t, 0), 0);
	id_of(p(0, "img"), b);
	assert_string_not_equal(a, b);
}

static void test_identity_changes_when_the_file_is_replaced(void **state)
{
	char a[CACHE_ID_MAX], b[CACHE_ID_MAX];

	(void)state;
	write_text(p(0, "img"), "one");
	id_of(p(0, "img"), a);
	write_text(p(1, "img.new"), "one");
	assert_int_equal(rename(p(1, "img.new"), p(0, "img")), 0);
	id_of(p(0, "img"), b);
	assert_string_not_equal(a, b);
}

static void test_identity_differs_between_files_and_follows_symlinks(void **state)
{
	char a[CACHE_ID_MAX], b[CACHE_ID_MAX], c[CACHE_ID_MAX];

	(void)state;
	write_text(p(0, "x"), "same");
	write_text(p(1, "y"), "same");
	id_of(p(0, "x"), a);
	id_of(p(1, "y"), b);
	assert_string_not_equal(a, b);
	assert_int_equal(symlink(p(0, "x"), p(2, "link")), 0);
	id_of(p(2, "link"), c);
	assert_string_equal(a, c);
}

struct probe {
	const char *final;
	int calls;
	char tmp[256];
};

static int make_dir_with_file(const char *tmp, void *arg)
{
	struct probe *pr = arg;
	char f[300];

	pr->calls++;
	snprintf(pr->tmp, sizeof(pr->tmp), "%s", tmp);
	/* while it is built, the final name does not exist */
	assert_int_equal(access(pr->final, F_OK), -1);
	assert_int_not_equal(strcmp(tmp, pr->final), 0);
	if (mkdir(tmp, 0755) < 0)
		return -1;
	snprintf(f, sizeof(f), "%s/done", tmp);
	write_text(f, "ok");
	return 0;
}

static void test_create_once_publishes_by_rename(void **state)
{
	struct probe pr = { .final = p(0, "entry") };
	struct err e = { 0 };
	struct stat st;

	(void)state;
	assert_int_equal(cache_create_once(p(1, "lock"), pr.final, make_dir_with_file, &pr, &e), 0);
	assert_int_equal(pr.calls, 1);
	assert_int_equal(stat(p(2, "entry/done"), &st), 0);
	assert_int_equal(access(pr.tmp, F_OK), -1); /* the temp became the entry */
	/* exists: not created again */
	assert_int_equal(cache_create_once(p(1, "lock"), pr.final, make_dir_with_file, &pr, &e), 0);
	assert_int_equal(pr.calls, 1);
}

/* Entries of the scratch dir that are creation temps. */
static int count_temps(void)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strstr(de->d_name, ".ctrun-tmp.") != NULL;
	closedir(d);
	return n;
}

static int fail_halfway(const char *tmp, void *arg)
{
	(void)arg;
	if (mkdir(tmp, 0755) < 0)
		return -1;
	errno = EIO;
	return -1;
}

static void test_failed_creation_leaves_nothing(void **state)
{
	struct err e = { 0 };
	struct probe pr = { .final = p(0, "entry") };

	(void)state;
	assert_int_equal(cache_create_once(p(1, "lock"), p(0, "entry"), fail_halfway, NULL, &e), -1);
	assert_int_equal(access(p(0, "entry"), F_OK), -1);
	assert_int_equal(count_temps(), 0);
	/* and the next call creates it */
	assert_int_equal(cache_create_once(p(1, "lock"), pr.final, make_dir_with_file, &pr, &e), 0);
	assert_int_equal(pr.calls, 1);
	assert_int_equal(count_temps(), 0);
}

static void test_stale_temp_of_a_crashed_creator_is_cleaned(void **state)
{
	struct probe pr = { .final = p(0, "entry") };
	struct err e = { 0 };
	char host[256], stale[400], junk[450];

	(void)state;
	gethostname(host, sizeof(host));
	host[strcspn(host, ".")] = '\0';
	/* what a creator killed with -9 half-way leaves */
	snprintf(stale, sizeof(stale), "%s/entry.ctrun-tmp.%s.999999", dir, host);
	assert_int_equal(mkdir(stale, 0755), 0);
	snprintf(junk, sizeof(junk), "%s/half-written", stale);
	write_text(junk, "partial");
	assert_int_equal(cache_create_once(p(1, "lock"), pr.final, make_dir_with_file, &pr, &e), 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(p(2, "entry/half-written"), F_OK), -1);
	assert_int_equal(access(p(2, "entry/done"), F_OK), 0);
	assert_int_equal(count_temps(), 0);
}

static int slow_counted(const char *tmp, void *arg)
{
	const char *counter = arg;
	int fd = open(counter, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd < 0 || write(fd, "x", 1) != 1)
		return -1;
	close(fd);
	nanosleep(&(struct timespec){ 0, 300 * 1000 * 1000 }, NULL);
	return mkdir(tmp, 0755);
}

static void test_concurrent_callers_create_exactly_once(void **state)
{
	char counter[256], final[256], lock[256];
	struct stat st;
	int status, ok = 0;

	(void)state;
	snprintf(counter, sizeof(counter), "%s/creations", dir);
	snprintf(final, sizeof(final), "%s/entry", dir);
	snprintf(lock, sizeof(lock), "%s/lock", dir);
	for (int i = 0; i < 8; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			struct err e = { 0 };

			/* stderr says "waiting for ..." in 7 of them; keep the test output clean */
			freopen("/dev/null", "w", stderr);
			_exit(cache_create_once(lock, final, slow_counted, counter, &e) == 0 &&
					      access(final, F_OK) == 0 ? 0 : 1);
		}
	}
	while (wait(&status) > 0)
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	assert_int_equal(ok, 8);
	assert_int_equal(stat(counter, &st), 0);
	assert_int_equal(st.st_size, 1);
}

static void small_image(const char *path, const char *text)
{
	const struct member l[] = { { "etc/motd", 'f', text, 0 } };
	struct blob b = tar_blob(l, 1, 0);

	make_docker_archive(path, &b, 1, 0);
	blob_free(&b);
}

/* In a child, so this process holds no use lock on the entry afterwards. */
static void get_in_child(const char *image)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cache_cfg c = cfg();
		struct err e = { 0 };
		char rootfs[4096];

		_exit(cache_get_rootfs(&c, image, rootfs, sizeof(rootfs), &e) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_get_rootfs_unpacks_once_and_returns_the_same_path(void **state)
{
	struct cache_cfg c = cfg();
	struct err e = { 0 };
	char r1[4096], r2[4096], motd[4200], buf[32] = "";
	FILE *f;

	(void)state;
	small_image(p(0, "img.tar"), "v1\n");
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r1, sizeof(r1), &e), 0);
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r2, sizeof(r2), &e), 0);
	assert_string_equal(r1, r2);
	snprintf(motd, sizeof(motd), "%s/etc/motd", r1);
	f = fopen(motd, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "v1\n");
	/* a replaced image gets a new entry */
	small_image(p(1, "img.new"), "v2\n");
	assert_int_equal(rename(p(1, "img.new"), p(0, "img.tar")), 0);
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r2, sizeof(r2), &e), 0);
	assert_string_not_equal(r1, r2);
}

static void test_directory_image_is_used_in_place(void **state)
{
	struct cache_cfg c = cfg();
	struct err e = { 0 };
	char r[4096];

	(void)state;
	assert_int_equal(mkdir(p(0, "rootfs"), 0755), 0);
	assert_int_equal(cache_get_rootfs(&c, p(0, "rootfs"), r, sizeof(r), &e), 0);
	assert_string_equal(r, p(0, "rootfs"));
}

static void test_gc_removes_least_recently_used_first(void **state)
{
	struct cache_cfg c = cfg();
	struct err e = { 0 };
	struct cache_entry *v;
	char old_id[CACHE_ID_MAX], new_id[CACHE_ID_MAX], last[512];
	unsigned long long freed;
	struct timespec t[2] = { { 1000, 0 }, { 1000, 0 } };
	size_t n;

	(void)state;
	small_image(p(0, "old.tar"), "old\n");
	small_image(p(1, "new.tar"), "new\n");
	get_in_child(p(0, "old.tar"));
	get_in_child(p(1, "new.tar"));
	id_of(p(0, "old.tar"), old_id);
	id_of(p(1, "new.tar"), new_id);
	snprintf(last, sizeof(last), "%s/entries/%s/last-use", c.dir, old_id);
	assert_int_equal(utimensat(AT_FDCWD, last, t, 0), 0);
	assert_int_equal(cache_list(&c, &v, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].id, old_id); /* LRU first */
	assert_true(v[0].bytes > 0);
	/* a budget that holds one entry */
	assert_int_equal(cache_gc(&c, v[1].bytes, &freed, &e), 0);
	free(v);
	assert_int_equal(cache_list(&c, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].id, new_id);
	assert_true(freed > 0);
	free(v);
}

static void test_entry_in_use_is_not_removed(void **state)
{
	struct cache_cfg c = cfg();
	struct err e = { 0 };
	char r[4096], id[CACHE_ID_MAX];
	unsigned long long freed;

	(void)state;
	small_image(p(0, "img.tar"), "x\n");
	/* this process now holds the entry (as a running container's ctrun does) */
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r, sizeof(r), &e), 0);
	id_of(p(0, "img.tar"), id);
	assert_int_equal(cache_remove(&c, id, true, &e), -1);
	assert_non_null(strstr(e.msg, "in use"));
	assert_int_equal(cache_gc(&c, 0, &freed, &e), 0);
	assert_int_equal(freed, 0);
	assert_int_equal(access(r, F_OK), 0);
}

static void test_foreign_cache_dir_is_refused(void **state)
{
	struct cache_cfg c = cfg();
	struct err e = { 0 };
	char r[4096];

	(void)state;
	if (geteuid() != 0)
		skip();
	small_image(p(0, "img.tar"), "x\n");
	assert_int_equal(mkdir(c.dir, 0700), 0);
	assert_int_equal(chown(c.dir, 65534, 65534), 0); /* someone else's, at our path */
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r, sizeof(r), &e), -1);
	assert_non_null(strstr(e.msg, "must be a directory of yours"));
	assert_int_equal(chown(c.dir, 0, 0), 0);
	assert_int_equal(chmod(c.dir, 0777), 0); /* or writable by everyone */
	assert_int_equal(cache_get_rootfs(&c, p(0, "img.tar"), r, sizeof(r), &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_is_stable_for_an_untouched_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_changes_when_the_file_is_modified_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_changes_when_the_file_is_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_differs_between_files_and_follows_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_once_publishes_by_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_creation_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_temp_of_a_crashed_creator_is_cleaned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_callers_create_exactly_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_rootfs_unpacks_once_and_returns_the_same_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_image_is_used_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc_removes_least_recently_used_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_in_use_is_not_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_cache_dir_is_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
