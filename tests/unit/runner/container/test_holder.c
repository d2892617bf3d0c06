/* Unit tests: what the image holder hands a ctrun of its node (its
 * namespaces and image as descriptors, never a pid), the share's lock, and
 * the cleanup of a dead holder's share (runner/container/holderwire.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "holder.h"
#include "rootpath.h"

static ino_t ns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_ino : 0;
}

static int wait_child(pid_t pid)
{
	int ws;

	if (waitpid(pid, &ws, 0) != pid)
		return -1;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* A fake holder: a child in a mount namespace of its own (and a user
 * namespace when not root) sends what a holder sends, then exits. */
static pid_t fake_holder(int sock, bool rootless)
{
	pid_t pid = fork();

	if (pid == 0) {
		const char *what[] = { "/", "/proc/self/ns/mnt", "/proc/self/ns/user" };
		int fds[3];
		size_t n = rootless ? 3 : 2;

		if (unshare(rootless ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) < 0)
			_exit(1);
		for (size_t i = 0; i < n; i++)
			if ((fds[i] = open(what[i], (i == 0 ? O_PATH | O_DIRECTORY : O_RDONLY) |
						    O_CLOEXEC)) < 0)
				_exit(1);
		_exit(holder_msg_send(sock, "/run/image", fds, n) == 0 ? 0 : 1);
	}
	return pid;
}

static void test_client_joins_the_namespace_it_was_given_after_the_holder_is_gone(void **state)
{
	bool rootless = geteuid() != 0;
	struct img_holder h;
	char dir[4096];
	int sv[2];
	pid_t holder, client;

	(void)state;
	holder_init(&h);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	holder = fake_holder(sv[1], rootless);
	assert_true(holder > 0);
	assert_int_equal(holder_msg_recv(sv[0], rootless, &h, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/run/image");
	/* Its pid is nobody's now (or anybody's later): the descriptors still
	 * name its namespace. */
	assert_int_equal(wait_child(holder), 0);
	assert_true(h.root >= 0 && h.mnt >= 0);
	assert_int_equal(h.user >= 0, rootless);
	client = fork();
	if (client == 0) {
		struct err e = { 0 };
		struct stat st;
		ino_t before = ns_ino("/proc/self/ns/mnt");

		if (holder_join(h.mnt, h.user, &e) < 0 || fstat(h.mnt, &st) < 0)
			_exit(2);
		_exit(ns_ino("/proc/self/ns/mnt") == st.st_ino && st.st_ino != before ? 0 : 3);
	}
	assert_int_equal(wait_child(client), 0);
	holder_stop(&h);
	assert_int_equal(h.mnt, -1);
	close(sv[0]);
	close(sv[1]);
}

static size_t open_fds(void)
{
	size_t n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void test_a_bare_pid_or_wrong_descriptors_are_refused(void **state)
{
	struct img_holder h;
	char text[4096];
	int sv[2], dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	size_t before;

	(void)state;
	holder_init(&h);
	assert_true(dirfd >= 0 && mnt >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	before = open_fds();
	/* What an older holder said: "PID DIR", nothing to prove it. */
	assert_int_equal(holder_msg_send(sv[1], "1 /run/image", NULL, 0), 0);
	assert_int_equal(holder_msg_recv(sv[0], false, &h, text, sizeof(text)), -1);
	assert_string_equal(text, "1 /run/image\n");
	assert_int_equal(holder_msg_send(sv[1], "/run/image", NULL, 0), 0);
	assert_int_equal(holder_msg_recv(sv[0], false, &h, text, sizeof(text)), -1);
	/* One descriptor short (rootless wants the user namespace too). */
	assert_int_equal(holder_msg_send(sv[1], "/run/image", (int[]){ dirfd, mnt }, 2), 0);
	assert_int_equal(holder_msg_recv(sv[0], true, &h, text, sizeof(text)), -1);
	/* A mount namespace where the image's directory should be. */
	assert_int_equal(holder_msg_send(sv[1], "/run/image", (int[]){ mnt, mnt }, 2), 0);
	assert_int_equal(holder_msg_recv(sv[0], false, &h, text, sizeof(text)), -1);
	/* A directory where the mount namespace should be. */
	assert_int_equal(holder_msg_send(sv[1], "/run/image", (int[]){ dirfd, dirfd }, 2), 0);
	assert_int_equal(holder_msg_recv(sv[0], false, &h, text, sizeof(text)), -1);
	assert_int_equal(h.root, -1);
	assert_int_equal(h.mnt, -1);
	/* What was refused was closed. */
	assert_int_equal(open_fds(), before);
	close(sv[0]);
	close(sv[1]);
	close(dirfd);
	close(mnt);
}

static void tmpdir(char *dir, size_t size)
{
	snprintf(dir, size, "%s/ctrun-test-holder-XXXXXX",
		 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
}

/* One waits on the lock; its holder removes the file and lets go: the
 * waiter must end up holding the file the name is now, not the removed one
 * (two ctruns would each think they own the share). */
static void test_the_lock_is_the_file_the_name_has_now(void **state)
{
	char dir[4096], path[4200];
	int lock, report[2], go[2];
	pid_t waiter;
	ino_t got = 0;
	struct stat st;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/share-x.lock", dir);
	lock = holder_share_lock(path, true);
	assert_true(lock >= 0);
	assert_int_equal(pipe(report), 0);
	assert_int_equal(pipe(go), 0);
	waiter = fork();
	if (waiter == 0) {
		int fd;
		char c;

		/* Our copy of the parent's lock would hold it (flock: per open file). */
		close(lock);
		close(go[1]);
		fd = holder_share_lock(path, true);
		if (fd < 0 || fstat(fd, &st) < 0 || write(report[1], &st.st_ino, sizeof(st.st_ino)) < 0)
			_exit(1);
		/* Held until the test has looked. */
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	/* It is blocked on our lock once /proc/locks shows it waiting. */
	for (bool blocked = false; !blocked;) {
		char *text = NULL, needle[64];
		size_t len = 0;
		FILE *f = fopen("/proc/locks", "r");

		assert_non_null(f);
		snprintf(needle, sizeof(needle), "-> FLOCK  ADVISORY  WRITE %ld ", (long)waiter);
		while (getline(&text, &len, f) > 0)
			blocked = blocked || strstr(text, needle) != NULL;
		free(text);
		fclose(f);
		if (!blocked)
			sched_yield();
	}
	assert_int_equal(unlink(path), 0);
	close(lock);
	assert_int_equal(read(report[0], &got, sizeof(got)), (ssize_t)sizeof(got));
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(got, st.st_ino);
	/* And it holds it: nobody else gets it now. */
	assert_int_equal(holder_share_lock(path, false), -1);
	close(go[1]);
	assert_int_equal(wait_child(waiter), 0);
	close(report[0]);
	close(report[1]);
	assert_int_equal(remove_tree(dir), 0);
}

static int bound(const char *share, bool listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.sock", share);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (listening)
		assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static bool exists(const char *share, const char *ext)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", share, ext);
	return lstat(path, &st) == 0;
}

static void test_gc_removes_a_dead_holders_share_only(void **state)
{
	char dir[4096], share[4200], lockpath[4300];
	int lock, s;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(share, sizeof(share), "%s/share-1.0-n1-0123456789abcdef", dir);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", share);
	/* A holder listens: kept. */
	s = bound(share, true);
	close(holder_share_lock(lockpath, true));
	assert_false(holder_share_gc(share));
	assert_true(exists(share, ".lock") && exists(share, ".sock"));
	close(s);
	/* Its lock is held (a ctrun is meeting it): kept. */
	lock = holder_share_lock(lockpath, true);
	assert_false(holder_share_gc(share));
	assert_true(exists(share, ".lock") && exists(share, ".sock"));
	close(lock);
	/* Nobody listens, nobody holds the lock (kill -9 of its starter): gone. */
	assert_true(holder_share_gc(share));
	assert_false(exists(share, ".lock"));
	assert_false(exists(share, ".sock"));
	/* A lock file alone (a holder ended between its two unlinks). */
	close(holder_share_lock(lockpath, true));
	assert_true(holder_share_gc(share));
	assert_false(exists(share, ".lock"));
	assert_int_equal(remove_tree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_joins_the_namespace_it_was_given_after_the_holder_is_gone),
		cmocka_unit_test(test_a_bare_pid_or_wrong_descriptors_are_refused),
		cmocka_unit_test(test_the_lock_is_the_file_the_name_has_now),
		cmocka_unit_test(test_gc_removes_a_dead_holders_share_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
