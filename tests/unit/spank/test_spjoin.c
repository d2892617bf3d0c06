/* Unit tests: how a task joins the node's container (spank/spjoin.c), on
 * the running kernel.  A child of the test stands for the holding agent:
 * an unprivileged user (the test's own uid, or 54321 when the test runs
 * as root) who builds the user namespaces of a container as ctrun's
 * rootless OCI runtime does (runner/container/userns.h: U1 maps the user
 * to themselves, U2 in it to root, the runtime's mount and UTS namespaces
 * in U2, the agent's own below U2 to run as the user), as enroot does
 * (one namespace mapping the user to themselves) or as ctrun did before
 * (U2 alone).  Another child, the same user in the test's namespaces,
 * joins it with sp_join and execs a shell that says what it is: its
 * uid_map and gid_map, its capabilities, and whether `hostname` can
 * change the container's host name (pyxis's unshare_uts.bats). */
#include "ctrtest.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "sphold.h"
#include "spjoin.h"

enum layout {
	CTRUN_USER, /* U1 (UID UID) > U2 (0 UID) > the agent's (UID 0) */
	CTRUN_ROOT, /* U1 > U2: the agent stays root (--container-remap-root) */
	FLAT_USER,  /* one namespace, UID UID (enroot, ch-run) */
	OLD_USER,   /* U2 alone > the agent's (ctrun before U1) */
};

static unsigned test_uid(void)
{
	return geteuid() == 0 ? 54321u : (unsigned)geteuid();
}

static unsigned test_gid(void)
{
	return geteuid() == 0 ? 54321u : (unsigned)getegid();
}

/* The test's user, dumpable (a uid change from root clears that, and the
 * joiner opens the holder's /proc/PID/ns/ as a peer). */
static int become_user(void)
{
	if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(test_gid(), test_gid(),
								     test_gid()) < 0 ||
			       setresuid(test_uid(), test_uid(), test_uid()) < 0))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static int put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace (and flags) mapping inside to the outside ids out. */
static int userns(int flags, unsigned inside_u, unsigned inside_g, unsigned out_u,
		  unsigned out_g)
{
	char map[64];

	if (unshare(CLONE_NEWUSER | flags) < 0 || put("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", inside_u, out_u);
	if (put("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", inside_g, out_g);
	return put("/proc/self/gid_map", map);
}

static int build(enum layout l)
{
	unsigned u = test_uid(), g = test_gid();

	if (l == FLAT_USER)
		return userns(CLONE_NEWNS | CLONE_NEWUTS, u, g, u, g) < 0 ||
				       sethostname("held", 4) < 0 ? -1 : 0;
	if (l != OLD_USER && userns(0, u, g, u, g) < 0)
		return -1;
	/* U2, then the runtime's container namespaces in it. */
	if (userns(CLONE_NEWNS, 0, 0, u, g) < 0 || unshare(CLONE_NEWNS | CLONE_NEWUTS) < 0 ||
	    sethostname("held", 4) < 0)
		return -1;
	return l == CTRUN_ROOT ? 0 : userns(0, u, g, 0, 0);
}

/* The holder: builds l, writes one byte to ready[1], holds until EOF on
 * hold[0]. */
static pid_t holder(enum layout l, const int *ready, const int *hold)
{
	pid_t pid = fork();
	char c;

	if (pid != 0)
		return pid;
	close(ready[0]);
	close(hold[1]);
	if (become_user() < 0 || build(l) < 0 || write(ready[1], "r", 1) != 1)
		_exit(1);
	while (read(hold[0], &c, 1) > 0)
		;
	_exit(0);
}

static const char probe[] =
	"echo uid $(cat /proc/self/uid_map); echo gid $(cat /proc/self/gid_map);"
	"c=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status);"
	"[ \"$c\" = 0000000000000000 ] && echo caps none || echo caps some;"
	"hostname ctrun-unit-uts 2>/dev/null && echo set; echo name $(hostname)";

/* What a joiner of the holder pid prints (probe), or NULL. */
static char *join_and_probe(pid_t pid, int hold_w)
{
	static char out[1024];
	size_t len = 0;
	ssize_t n;
	int p[2], ws;
	pid_t child;

	assert_int_equal(pipe(p), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct sp_hold h;
		struct err e = { 0 };

		close(p[0]);
		close(hold_w);

		sp_hold_init(&h);
		dup2(p[1], 1);
		if (become_user() < 0 || sp_hold_open(&h, (long)pid, &e) < 0 ||
		    sp_join(h.fds, "/", NULL, &e) < 0) {
			printf("join: %s\n", e.msg);
			fflush(stdout);
			_exit(1);
		}
		execl("/bin/sh", "sh", "-c", probe, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (len < sizeof(out) - 1 && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(child, &ws, 0), child);
	return out;
}

/* Runs the probe in a joiner of a holder of layout l. */
static void joined(enum layout l, const char *want_uid, const char *want_gid, bool sets)
{
	char host[256], after[256], want[1024];
	int ready[2], hold[2];
	const char *got;
	pid_t pid;
	char c;
	int ws;

	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	pid = holder(l, ready, hold);
	assert_true(pid > 0);
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1) {
		close(hold[1]);
		waitpid(pid, &ws, 0);
		fail_msg("the holder could not build its namespaces (unprivileged user "
			 "namespaces disabled?)");
	}
	got = join_and_probe(pid, hold[1]);
	close(hold[1]);
	close(ready[0]);
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	/* Root of a namespace keeps its capabilities across exec; the user
	 * has none in its own. */
	snprintf(want, sizeof(want), "uid %s\ngid %s\ncaps %s\n%sname %s\n", want_uid, want_gid,
		 strncmp(want_uid, "0 ", 2) == 0 ? "some" : "none", sets ? "set\n" : "",
		 sets ? "ctrun-unit-uts" : "held");
	assert_string_equal(got, want);
	assert_int_equal(gethostname(after, sizeof(after)), 0);
	assert_string_equal(after, host);
}

static char *map_of(unsigned in, unsigned out)
{
	static char buf[2][32];
	static int i;

	i ^= 1;
	snprintf(buf[i], sizeof(buf[i]), "%u %u 1", in, out);
	return buf[i];
}

static void test_ctrun_layout_task_is_the_user_mapped_to_itself_and_may_set_the_host_name(void **s)
{
	(void)s;
	/* pyxis's remap_root.bats: "UID UID 1"; unshare_uts.bats: hostname
	 * succeeds in the container's UTS namespace only; no capability. */
	joined(CTRUN_USER, map_of(test_uid(), test_uid()), map_of(test_gid(), test_gid()), true);
}

static void test_ctrun_layout_remap_root_task_is_root_mapped_to_the_user(void **s)
{
	(void)s;
	joined(CTRUN_ROOT, map_of(0, test_uid()), map_of(0, test_gid()), true);
}

static void test_flat_layout_task_is_the_user_without_capabilities(void **s)
{
	(void)s;
	/* enroot's: its namespace is the task's own, where it has nothing. */
	joined(FLAT_USER, map_of(test_uid(), test_uid()), map_of(test_gid(), test_gid()), false);
}

static void test_old_layout_task_takes_the_agents_identity(void **s)
{
	(void)s;
	joined(OLD_USER, map_of(test_uid(), 0), map_of(test_gid(), 0), false);
}

static void test_hold_user_is_joined_unless_the_outer_namespace_is_the_users(void **s)
{
	(void)s;
	assert_true(sp_join_hold_user(1, false));  /* enroot, ch-run: theirs is the outer */
	assert_true(sp_join_hold_user(1, true));   /* ctrun before U1: the agent's identity */
	assert_false(sp_join_hold_user(2, true));  /* U1 > U2 > the agent's: U1 is the user */
	assert_true(sp_join_hold_user(2, false));  /* U1 > U2 = the hold's: root */
	assert_false(sp_join_hold_user(3, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctrun_layout_task_is_the_user_mapped_to_itself_and_may_set_the_host_name),
		cmocka_unit_test(test_ctrun_layout_remap_root_task_is_root_mapped_to_the_user),
		cmocka_unit_test(test_flat_layout_task_is_the_user_without_capabilities),
		cmocka_unit_test(test_old_layout_task_takes_the_agents_identity),
		cmocka_unit_test(test_hold_user_is_joined_unless_the_outer_namespace_is_the_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
