/* Unit tests: the node's shared cache as other local users meet it: root
 * fills it, every user reads it, nobody but root can change what is in it,
 * and no lock another user can take stalls anyone (cache_shared.c). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/cache.h"
#define CTRTEST_CACHE_FIXTURE
#define CTRTEST_ARCHIVES
#include "ctrtest.h"

/* The node's shared cache: root fills it (0755 down to the entry, lock
 * files 0644, nothing in the image writable by others, no setuid), every
 * user then gets that entry read-only and makes no cache of its own. */
static void shared_image(const char *path)
{
	const struct member l[] = {
		{ "etc/motd", 'f', "shared\n", 0 },
		{ "tmp/", 'd', NULL, 0 },
		{ "usr/bin/su", 'f', "#!\n", 0 },
	};
	struct blob b = tar_blob(l, 3, 0);

	make_docker_archive(path, &b, 1, 0);
	blob_free(&b);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_shared_cache_filled_by_root_is_read_by_every_user(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	struct err e = { 0 };
	char r[4096], id[CACHE_ID_MAX], path[4200];
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(dir, 0755), 0); /* the test user can reach it */
	shared_image(p(0, "img.tar"));
	assert_int_equal(chmod(p(0, "img.tar"), 0644), 0);
	assert_int_equal(cache_get_rootfs(&root, p(0, "img.tar"), r, sizeof(r), &e), 0);
	id_of(p(0, "img.tar"), id);
	assert_int_equal(mode_of(root.dir), 0755);
	snprintf(path, sizeof(path), "%s/entries", root.dir);
	assert_int_equal(mode_of(path), 0755);
	snprintf(path, sizeof(path), "%s/locks/%s.use", root.dir, id);
	assert_int_equal(mode_of(path), 0644);
	snprintf(path, sizeof(path), "%s/usr/bin/su", r);
	assert_int_equal(mode_of(path) & 07022, 0);
	snprintf(path, sizeof(path), "%s/tmp", r);
	assert_int_equal(mode_of(path) & 022, 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cache_cfg user = { .dir = p(3, "user-cache"), .quiet = true,
					  .lookup = p(2, "shared") };
		char got[4096], motd[4200];
		int fd;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		if (cache_get_rootfs(&user, p(0, "img.tar"), got, sizeof(got), &e) < 0)
			_exit(11);
		if (strcmp(got, r) != 0)
			_exit(12); /* the shared entry itself */
		if (access(user.dir, F_OK) == 0)
			_exit(13); /* no private cache made */
		snprintf(motd, sizeof(motd), "%s/etc/motd", got);
		fd = open(motd, O_WRONLY);
		if (fd >= 0 || errno != EACCES)
			_exit(14); /* read only for users */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_untrusted_or_missing_shared_cache(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	struct cache_cfg user = { .dir = p(3, "user-cache"), .quiet = true,
				  .lookup = p(2, "shared") };
	struct err e = { 0 };
	char r[4096], id[CACHE_ID_MAX], entries[4200];

	(void)state;
	if (geteuid() != 0)
		skip();
	shared_image(p(0, "img.tar"));
	/* None yet: the caller's own cache is used. */
	assert_int_equal(cache_get_rootfs(&user, p(0, "img.tar"), r, sizeof(r), &e), 0);
	assert_non_null(strstr(r, "user-cache"));
	assert_int_equal(cache_get_rootfs(&root, p(0, "img.tar"), r, sizeof(r), &e), 0);
	id_of(p(0, "img.tar"), id);
	/* An entries directory that others can write: refused, named. */
	snprintf(entries, sizeof(entries), "%s/entries", root.dir);
	assert_int_equal(chmod(entries, 0777), 0);
	assert_int_equal(cache_get_rootfs(&user, p(0, "img.tar"), r, sizeof(r), &e), -1);
	assert_non_null(strstr(e.msg, "writable by group or others"));
	assert_int_equal(chmod(entries, 0755), 0);
	/* An entry not root's. */
	snprintf(entries, sizeof(entries), "%s/entries/%s", root.dir, id);
	assert_int_equal(chown(entries, 65534, 65534), 0);
	assert_int_equal(cache_get_rootfs(&user, p(0, "img.tar"), r, sizeof(r), &e), -1);
	assert_non_null(strstr(e.msg, "not owned by root"));
}

static void test_shared_cache_is_filled_by_root_only(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	struct err e = { 0 };
	char r[4096];
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(dir, 0777), 0);
	shared_image(p(0, "img.tar"));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		if (cache_get_rootfs(&root, p(0, "img.tar"), r, sizeof(r), &e) == 0)
			_exit(11);
		_exit(strstr(e.msg, "only root fills") != NULL && e.code == EXIT_USAGE ? 0 : 12);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(access(root.dir, F_OK), -1);
}

/* An image whose home directory belongs to uid 1001, as most real images'
 * /home/ubuntu or /opt/conda do: in a shared entry it must not be host user
 * 1001's to rewrite, since every user (root too) runs that entry. */
static void user_owned_image(const char *path)
{
	const struct member l[] = {
		{ "home/", 'd', NULL, 0, 0 },
		{ "home/ubuntu/", 'd', NULL, 0, 1001 },
		{ "home/ubuntu/run.sh", 'f', "#!/bin/sh\necho ok\n", 0, 1001 },
		{ "etc/motd", 'f', "shared\n", 0, 1001 },
	};
	struct blob b = tar_blob(l, 4, 0);

	make_docker_archive(path, &b, 1, 0);
	blob_free(&b);
}

/* Root's `ctrun cache create --shared IMAGE`, in a child: the use lock it
 * takes goes with it, as with the real command. */
static void create_shared(const struct cache_cfg *root, const char *image)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct err e = { 0 };
		char r[4096];

		_exit(cache_get_rootfs(root, image, r, sizeof(r), &e) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Exit status of fn(arg) run in a child that became uid/gid `uid`. */
static int as_user(unsigned uid, int (*fn)(const char *), const char *arg)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(uid) < 0 || setuid(uid) < 0)
			_exit(100);
		_exit(fn(arg));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int open_for_writing(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	return fd < 0 && errno == EACCES ? 0 : 1;
}

static int find_not_roots(const char *root)
{
	char cmd[4300];

	snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' ! -uid 0 -o ! -gid 0)\"", root);
	return system(cmd);
}

static void test_shared_entry_is_roots_whoever_owned_the_image_files(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	struct err e = { 0 };
	char r[4096], path[4200];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(dir, 0755), 0);
	user_owned_image(p(0, "img.tar"));
	assert_int_equal(cache_get_rootfs(&root, p(0, "img.tar"), r, sizeof(r), &e), 0);
	assert_int_equal(find_not_roots(r), 0);
	snprintf(path, sizeof(path), "%s/home/ubuntu/run.sh", r);
	assert_int_equal(as_user(1001, open_for_writing, path), 0);
	/* ... and a root's private cache keeps the image's owners (docker's way). */
	struct cache_cfg mine = cfg();
	char own[4096];

	assert_int_equal(cache_get_rootfs(&mine, p(0, "img.tar"), own, sizeof(own), &e), 0);
	snprintf(path, sizeof(path), "%s/home/ubuntu/run.sh", own);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 1001);
}

/* An entry whose tree is not all root's (made by an older ctrun, or changed
 * since) is not handed to users, and `cache create --shared` does not call
 * it valid. */
static void test_shared_entry_not_all_roots_is_not_trusted(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	struct cache_cfg user = { .dir = p(3, "user-cache"), .quiet = true,
				  .lookup = p(2, "shared") };
	struct err e = { 0 };
	char r[4096], path[4200], id[CACHE_ID_MAX];

	(void)state;
	if (geteuid() != 0)
		skip();
	shared_image(p(0, "img.tar"));
	create_shared(&root, p(0, "img.tar"));
	id_of(p(0, "img.tar"), id);
	snprintf(r, sizeof(r), "%s/entries/%s/rootfs", root.dir, id);
	snprintf(path, sizeof(path), "%s/etc/motd", r);
	assert_int_equal(chown(path, 1001, 1001), 0);
	assert_int_equal(cache_get_rootfs(&root, p(0, "img.tar"), r, sizeof(r), &e), -1);
	assert_non_null(strstr(e.msg, "not owned by root"));
	assert_non_null(strstr(e.msg, "cannot be trusted"));
	assert_int_equal(chown(path, 0, 0), 0);
	/* A meta.json without the mark: users make their own. */
	snprintf(path, sizeof(path), "%s/entries/%s/meta.json", root.dir, id);
	write_text(path, "{ \"image\": \"x\" }\n");
	assert_int_equal(cache_get_rootfs(&user, p(0, "img.tar"), r, sizeof(r), &e), 0);
	assert_non_null(strstr(r, "user-cache"));
}

/* flock works on a read-only descriptor: any user can hold the 0644 use
 * lock of a shared entry exclusively.  A run must neither wait for ever nor
 * fail: it uses its own cache. */
static void test_a_held_shared_lock_stalls_no_one(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	char r[4096], lock[4200], id[CACHE_ID_MAX], c;
	struct err e = { 0 };
	int fds[2], status;
	pid_t holder, pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(dir, 01777), 0); /* the user can make its own cache */
	shared_image(p(0, "img.tar"));
	assert_int_equal(chmod(p(0, "img.tar"), 0644), 0);
	create_shared(&root, p(0, "img.tar"));
	id_of(p(0, "img.tar"), id);
	snprintf(lock, sizeof(lock), "%s/locks/%s.use", root.dir, id);
	assert_int_equal(pipe(fds), 0);
	holder = fork(); /* the attacker: another user, read-only descriptor */
	assert_true(holder >= 0);
	if (holder == 0) {
		int fd;

		if (setgid(65533) < 0 || setuid(65533) < 0)
			_exit(1);
		fd = open(lock, O_RDONLY);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(2);
		(void)!write(fds[1], "l", 1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cache_cfg user = { .dir = p(3, "user-cache"), .quiet = true,
					  .lookup = p(2, "shared") };

		alarm(60); /* a run that waits for ever fails here, not hangs the suite */
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		if (cache_get_rootfs(&user, p(0, "img.tar"), r, sizeof(r), &e) < 0)
			_exit(11);
		_exit(strstr(r, "user-cache") != NULL ? 0 : 12);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	close(fds[0]);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Whether pid is now in a flock or sleeping (the shared lock's wait). */
static bool in_lock_wait(pid_t pid)
{
	char path[64], buf[64] = "";
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) != NULL)
		nr = strtol(buf, NULL, 10);
	fclose(f);
	return nr == SYS_flock || nr == SYS_clock_nanosleep || nr == SYS_nanosleep;
}

/* A gc that removes the entry while a run waits for its use lock: the run
 * must look at the entry only once it holds the lock (lock first, then
 * check), so it never gets the path of a tree that is gone. */
static void test_entry_removed_while_waiting_for_its_lock_is_not_used(void **state)
{
	struct cache_cfg root = { .dir = p(2, "shared"), .quiet = true, .shared = true };
	char r[4096], lock[4200], entry[4200], trash[4200], id[CACHE_ID_MAX];
	struct err e = { 0 };
	int fd, status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	shared_image(p(0, "img.tar"));
	create_shared(&root, p(0, "img.tar"));
	id_of(p(0, "img.tar"), id);
	snprintf(lock, sizeof(lock), "%s/locks/%s.use", root.dir, id);
	snprintf(entry, sizeof(entry), "%s/entries/%s", root.dir, id);
	snprintf(trash, sizeof(trash), "%s/trash/%s.gc", root.dir, id);
	fd = open(lock, O_RDWR); /* the gc: holds the lock exclusively */
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cache_cfg run = { .dir = p(3, "own-cache"), .quiet = true,
					 .lookup = p(2, "shared") };
		struct stat st;

		alarm(60);
		if (cache_get_rootfs(&run, p(0, "img.tar"), r, sizeof(r), &e) < 0)
			_exit(11);
		_exit(stat(r, &st) == 0 && strstr(r, "own-cache") != NULL ? 0 : 12);
	}
	while (!in_lock_wait(pid))
		sched_yield();
	/* The gc takes the entry away and lets go. */
	assert_int_equal(rename(entry, trash), 0);
	assert_int_equal(remove_tree(trash), 0);
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shared_cache_filled_by_root_is_read_by_every_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_or_missing_shared_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_cache_is_filled_by_root_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_entry_is_roots_whoever_owned_the_image_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_entry_not_all_roots_is_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_held_shared_lock_stalls_no_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_removed_while_waiting_for_its_lock_is_not_used, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
