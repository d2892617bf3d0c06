/* Unit tests: one mounted root per named container, shared by the runs
 * that use it at once (runner/container/namedroot.c): the mountinfo
 * reader, then real runs as processes over a real overlay in a temporary
 * cache (as root: the user-namespace path is the integration tests' and
 * each run's runtime is a child that attaches the root as ctrun's does):
 * two runs at once see each other's files through one overlay; while
 * they run, remove and the runs that need it alone are refused; the
 * last to leave takes the root and its doors with it; a run killed with
 * kill -9 leaves a door the next run removes, and a process of it that
 * still has the root is found. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "namedroot.h"
#include "rootpath.h"

static char root[] = "/tmp/ctrun-test-namedroot.XXXXXX";
static char cachedir[300], lower[300];
static struct cache_cfg cfg;

static int setup(void **state)
{
	char path[400];
	FILE *f;

	(void)state;
	if (geteuid() != 0)
		return 0;
	assert_non_null(mkdtemp(root));
	snprintf(cachedir, sizeof(cachedir), "%s/cache", root);
	snprintf(lower, sizeof(lower), "%s/lower", root);
	assert_int_equal(mkdir(lower, 0755), 0);
	snprintf(path, sizeof(path), "%s/from-image", lower);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("image\n", f);
	fclose(f);
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = cachedir;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (geteuid() == 0)
		remove_tree(root);
	return 0;
}

static void test_mountinfo_names_a_mount_by_its_source(void **state)
{
	const char *text =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"191 193 0:56 / /tmp/x rw,nosuid,nodev - overlay ctrun-named:8.1:42 rw,lowerdir=/l\n"
		"200 22 0:57 / /a rw master:3 - tmpfs ctrun-named:8.1:4 rw";
	const char *last = "1 0 0:1 / / rw - overlay ctrun-named:8.1:42";

	(void)state;
	assert_true(named_mountinfo_has(text, strlen(text), "ctrun-named:8.1:42"));
	assert_true(named_mountinfo_has(text, strlen(text), "ctrun-named:8.1:4"));
	/* a prefix of another mount's source, a type, a mount point: no */
	assert_false(named_mountinfo_has(text, strlen(text), "ctrun-named:8.1:420"));
	assert_false(named_mountinfo_has(text, strlen(text), "ctrun-named:8.1"));
	assert_false(named_mountinfo_has(text, strlen(text), "overlay"));
	assert_false(named_mountinfo_has(text, strlen(text), "/tmp/x"));
	/* the last line without its newline, and a text cut in a line */
	assert_true(named_mountinfo_has(last, strlen(last), "ctrun-named:8.1:42"));
	assert_false(named_mountinfo_has(last, strlen(last) - 1, "ctrun-named:8.1:42"));
	assert_false(named_mountinfo_has("", 0, "ctrun-named:8.1:42"));
}

/* One run as ctrun makes it: the named container taken, its root joined
 * or mounted, the gate released; its runtime a child that attaches the
 * root in a mount namespace of its own, writes "from-TAG", tells the test
 * (ready) and waits for its word (go) to say whether it sees want. */
struct run {
	pid_t pid;      /* the run (ctrun) */
	int ready, go;  /* the test's ends */
};

static void runtime_child(const struct named *n, const struct named_root *r, const char *tag,
			  const char *want, int ready, int go)
{
	char dir[400], path[500];
	char c;
	int fd;

	/* ctrun's are close-on-exec: the runtime holds none of its locks. */
	close(n->lock_fd);

	snprintf(dir, sizeof(dir), "%s/attach-%s", root, tag);
	if ((mkdir(dir, 0755) < 0 && errno != EEXIST) || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    move_mount(r->tree, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		_exit(10);
	snprintf(path, sizeof(path), "%s/from-%s", dir, tag);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, tag, strlen(tag)) < 0 || close(fd) < 0)
		_exit(11);
	snprintf(path, sizeof(path), "%s/from-image", dir);
	if (access(path, F_OK) < 0)
		_exit(12);
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(13);
	snprintf(path, sizeof(path), "%s/from-%s", dir, want);
	_exit(want[0] == '\0' || access(path, F_OK) == 0 ? 0 : 14);
}

static struct run start_run(const char *tag, const char *want)
{
	int rp[2], gp[2];
	struct run run;

	assert_int_equal(pipe(rp), 0);
	assert_int_equal(pipe(gp), 0);
	run.pid = fork();
	assert_true(run.pid >= 0);
	if (run.pid == 0) {
		struct named_req q = { &cfg, "shared", "/img/a.sqsh", "squashfs-aaaa", false, false };
		struct named n;
		struct named_root r;
		struct err e = { 0 };
		struct named_root_req rq = { .n = &n, .lower = lower, .holder_mnt = -1 };
		int ws = 0;
		pid_t rt;

		close(rp[0]);
		close(gp[1]);
		if (named_open(&q, &n, &e) < 0 || named_root_take(&rq, &r, &e) < 0) {
			fprintf(stderr, "run %s: %s\n", tag, e.msg);
			_exit(20);
		}
		named_gate_release(&n);
		rt = fork();
		if (rt == 0)
			runtime_child(&n, &r, tag, want, rp[1], gp[0]);
		close(rp[1]);
		close(gp[0]);
		waitpid(rt, &ws, 0);
		named_root_leave(&n, &r);
		named_close(&n);
		_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 30);
	}
	close(rp[1]);
	close(gp[0]);
	run.ready = rp[0];
	run.go = gp[1];
	return run;
}

static int end_run(struct run *run)
{
	int ws = 0;

	assert_int_equal(write(run->go, "g", 1), 1);
	close(run->go);
	close(run->ready);
	assert_int_equal(waitpid(run->pid, &ws, 0), run->pid);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static void wait_ready(const struct run *run)
{
	char c;

	assert_int_equal(read(run->ready, &c, 1), 1);
}

static int doors(void)
{
	char path[400];
	int n = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/locks", cachedir);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += named_door_pid(de->d_name, "shared") > 0;
	closedir(d);
	return n;
}

/* The shared overlay's mount source (named.h tag). */
static void tag_of(char *tag, size_t size)
{
	struct named_req q = { &cfg, "shared", "/img/a.sqsh", "squashfs-aaaa", false, false };
	struct named n;
	struct err e = { 0 };

	assert_int_equal(named_open(&q, &n, &e), 0);
	snprintf(tag, size, "%s", n.tag);
	named_close(&n);
}

static bool file_in_upper(const char *name)
{
	char path[500];

	snprintf(path, sizeof(path), "%s/containers/shared/upper/%s", cachedir, name);
	return access(path, F_OK) == 0;
}

static void test_two_runs_at_once_share_one_root(void **state)
{
	struct named_req q = { &cfg, "shared", "/img/a.sqsh", "squashfs-aaaa", false, true };
	struct named_entry *v;
	struct named n;
	struct err e = { 0 };
	struct run a, b;
	bool found, busy = false;
	char tag[64];
	size_t cnt;

	(void)state;
	if (geteuid() != 0)
		skip();
	a = start_run("a", "b");
	wait_ready(&a);
	b = start_run("b", "a");
	wait_ready(&b);
	/* Both at once: one root (each sees the other's file, when told). */
	assert_int_equal(doors(), 2);
	/* In use: remove, gc and the runs that need it alone are refused. */
	assert_int_equal(named_remove(&cfg, "shared", &found, &e), -1);
	assert_non_null(strstr(e.msg, "cache remove shared: in use by pid "));
	assert_int_equal(named_open(&q, &n, &e), -1);
	assert_non_null(strstr(e.msg, "--name shared: in use by pid "));
	q.exclusive = false;
	q.reset = true;
	assert_int_equal(named_open(&q, &n, &e), -1);
	assert_non_null(strstr(e.msg, "--name shared: in use by pid "));
	assert_int_equal(named_list(&cfg, &v, &cnt, &e), 0);
	for (size_t i = 0; i < cnt; i++)
		busy = busy || (strcmp(v[i].name, "shared") == 0 && v[i].in_use);
	free(v);
	assert_true(busy);
	assert_int_equal(end_run(&a), 0);
	assert_int_equal(end_run(&b), 0);
	/* Kept after both, and nothing of the root is left. */
	assert_true(file_in_upper("from-a"));
	assert_true(file_in_upper("from-b"));
	assert_int_equal(doors(), 0);
	tag_of(tag, sizeof(tag));
	assert_int_equal(named_root_lingering(tag, 0), 0);
}

/* A third run after the first left and while the second runs still joins
 * the second's root (the first's server is gone): the root outlives the
 * run that mounted it. */
static void test_the_root_outlives_the_run_that_mounted_it(void **state)
{
	struct run a, b, c;
	char tag[64];

	(void)state;
	if (geteuid() != 0)
		skip();
	a = start_run("a2", "");
	wait_ready(&a);
	b = start_run("b2", "a2");
	wait_ready(&b);
	assert_int_equal(end_run(&a), 0);
	c = start_run("c2", "b2");
	wait_ready(&c);
	assert_int_equal(doors(), 2);
	assert_int_equal(end_run(&b), 0);
	assert_int_equal(end_run(&c), 0);
	assert_int_equal(doors(), 0);
	tag_of(tag, sizeof(tag));
	assert_int_equal(named_root_lingering(tag, 0), 0);
}

/* kill -9 of a run: its door stays behind and its runtime may still have
 * the root; the runtime is found by its mount, and once it is gone the
 * next run removes the dead door and mounts the root anew. */
static void test_a_killed_run_leaves_nothing_the_next_cannot_clear(void **state)
{
	struct run a, b;
	char tag[64];
	pid_t left;
	int ws, pfd;

	(void)state;
	if (geteuid() != 0)
		skip();
	a = start_run("k", "");
	wait_ready(&a);
	assert_int_equal(kill(a.pid, SIGKILL), 0);
	assert_int_equal(waitpid(a.pid, &ws, 0), a.pid);
	/* Its runtime (a child of the killed run) still has the root. */
	assert_int_equal(doors(), 1);
	tag_of(tag, sizeof(tag));
	left = named_root_lingering(tag, 0);
	assert_true(left > 0);
	/* It ends (EOF on go), and is no more found. */
	pfd = (int)syscall(SYS_pidfd_open, left, 0);
	assert_true(pfd >= 0);
	close(a.go);
	close(a.ready);
	assert_int_equal(poll(&(struct pollfd){ .fd = pfd, .events = POLLIN }, 1, 60000), 1);
	close(pfd);
	assert_int_equal(named_root_lingering(tag, 0), 0);
	b = start_run("k2", "k");
	wait_ready(&b);
	assert_int_equal(doors(), 1);
	assert_int_equal(end_run(&b), 0);
	assert_int_equal(doors(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mountinfo_names_a_mount_by_its_source),
		cmocka_unit_test(test_two_runs_at_once_share_one_root),
		cmocka_unit_test(test_the_root_outlives_the_run_that_mounted_it),
		cmocka_unit_test(test_a_killed_run_leaves_nothing_the_next_cannot_clear),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
