/* Unit tests: supervise_run with real worker processes (sh scripts, in
 * tests only): exit status, fail-fast, signal forwarding, SIGURG, no
 * orphans (also when ctrun is SIGKILLed), exec failures, PATH resolution.
 *
 * Each run forks a child playing ctrun: it calls supervise_run with its
 * stdout/stderr in a temp dir and sends the result back on a pipe, so
 * signals can be aimed at it and its own process state stays out of the
 * test runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"
#include "guardian.h"
#include "supervise.h"
#include "util.h"

#define MAXW 4

struct run {
	pid_t pid;  /* the child playing ctrun */
	int res;    /* read end: struct msg */
	char dir[64];
	struct worker w[MAXW];
	char *argv[MAXW][5];
	char *env[MAXW][512];
	char vars[MAXW][2][PATH_MAX];
	cpu_set_t cpus;
	struct supervise_opts o;
	rlim_t nofile; /* descriptor limit for ctrun, 0 = unchanged */
};

static struct run rn; /* large: not on the stack */

struct msg {
	int rv;
	struct supervise_result r;
	struct err e;
};

/* The workers of these tests sleep 30 s: a run that ends before this did
 * not wait for them.  Only a guard against a hang, never a timing goal
 * (those are in `make bench`). */
#define HANG_GUARD_MS 15000

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* n workers running `sh -c script` with RANK and TDIR (the temp dir) set. */
static void prepare(struct run *r, size_t n, const char *script)
{
	extern char **environ;

	memset(r, 0, sizeof(*r));
	strcpy(r->dir, "/tmp/ctrun-sup-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		r->argv[i][0] = "/bin/sh";
		r->argv[i][1] = "-c";
		r->argv[i][2] = (char *)script;
		r->argv[i][3] = "sh";
		for (char **p = environ; *p != NULL && k < 500; p++)
			r->env[i][k++] = *p;
		snprintf(r->vars[i][0], PATH_MAX, "RANK=%zu", i);
		snprintf(r->vars[i][1], PATH_MAX, "TDIR=%s", r->dir);
		r->env[i][k++] = r->vars[i][0];
		r->env[i][k++] = r->vars[i][1];
		r->w[i] = (struct worker){ .rank = (long)i, .local_rank = (long)i,
					    .argv = r->argv[i], .envp = r->env[i] };
	}
	r->o = (struct supervise_opts){ .host = "testhost", .prefix = true, .grace_ms = 1000 };
}

static char *path_in(const struct run *r, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	return path;
}

static void start(struct run *r, size_t n)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		struct msg m = { 0 };
		int out = open(path_in(r, "out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(path_in(r, "err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		close(p[0]);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(99);
		close(out);
		close(err);
		if (r->nofile > 0 &&
		    setrlimit(RLIMIT_NOFILE, &(struct rlimit){ r->nofile, r->nofile }) < 0)
			_exit(97);
		m.rv = supervise_run(r->w, n, &r->o, &m.r, &m.e);
		if (write(p[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(98);
		_exit(0);
	}
	close(p[1]);
	r->res = p[0];
}

/* The result as sent before the child exits: what is still running at
 * this point was left behind by supervise_run. */
static struct msg finish_result(struct run *r)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	assert_int_equal(read(r->res, &m, sizeof(m)), (ssize_t)sizeof(m));
	close(r->res);
	return m;
}

static void reap_child(struct run *r)
{
	int ws;

	assert_int_equal(waitpid(r->pid, &ws, 0), r->pid);
	r->pid = 0;
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static struct msg run(struct run *r, size_t n)
{
	struct msg m;

	start(r, n);
	m = finish_result(r);
	reap_child(r);
	return m;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static char *slurp(struct run *r, const char *name)
{
	char *s = read_file(path_in(r, name), NULL);

	assert_non_null(s);
	return s;
}

/* Until the worker has written a whole line into the file (the event);
 * false after timeout_ms, a guard against a hang. */
static bool wait_file(struct run *r, const char *name, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	for (;;) {
		size_t len = 0;
		char *s = read_file(path_in(r, name), &len);
		bool done = s != NULL && len > 0 && s[len - 1] == '\n';

		free(s);
		if (done)
			return true;
		if (now_ms() > end)
			return false;
		usleep(10000);
	}
}

static pid_t read_pid(struct run *r, const char *name)
{
	char *s;
	long v;

	assert_true(wait_file(r, name, 5000));
	s = slurp(r, name);
	s[strcspn(s, "\n")] = '\0';
	assert_int_equal(parse_long(s, 1, INT_MAX, &v), 0);
	free(s);
	return (pid_t)v;
}

/* Gone for good: no such process, or a zombie nobody will run again. */
static bool gone(pid_t pid)
{
	char path[64], *s, *p;
	bool z = false;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = read_file(path, NULL);
	if (s == NULL)
		return true;
	p = strrchr(s, ')');
	z = p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	free(s);
	return z;
}

/* Runs after every test, passed or not: no ctrun child, workers or temp
 * files outlive it (a SIGKILLed ctrun leaves its workers to the guardian). */
static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	if (rn.pid > 0) {
		kill(rn.pid, SIGKILL);
		waitpid(rn.pid, NULL, 0);
		rn.pid = 0;
	}
	if (rn.dir[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rn.dir);
		if (system(cmd) != 0)
			return -1;
		rn.dir[0] = '\0';
	}
	return 0;
}

static void test_all_workers_exit_zero_gives_status_zero(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 3, "exit 0");
	m = run(&rn, 3);
	assert_int_equal(m.rv, 0);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(m.r.failed_rank, -1);
	assert_int_equal(m.r.got_signal, 0);
	assert_false(m.r.peer_failed);
}

/* Rank 1 exits 3; ranks 0 and 2 would sleep 30 s, each with a background
 * grandchild.  Status 3, fast, and nothing of theirs left. */
static void test_first_failure_stops_the_others_fast(void **state)
{
	const char *script = "sleep 30 & echo $! > $TDIR/gc$RANK; echo $$ > $TDIR/pid$RANK;"
			     "if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; wait";
	pid_t pids[6];
	long long t0;
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 3, script);
	t0 = now_ms();
	start(&rn, 3);
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "pid%d", i);
		pids[i] = read_pid(&rn, name);
		snprintf(name, sizeof(name), "gc%d", i);
		pids[3 + i] = read_pid(&rn, name);
	}
	m = finish_result(&rn);
	assert_true(now_ms() - t0 < HANG_GUARD_MS);
	for (int i = 0; i < 6; i++)
		assert_true(gone(pids[i]));
	reap_child(&rn);
	assert_int_equal(m.r.status, 3);
	assert_int_equal(m.r.failed_rank, 1);
	assert_int_equal(m.r.exit_code, 3);
	assert_int_equal(m.r.term_signal, 0);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "ctrun: rank 1 on host testhost failed first: "
				    "exited with status 3\n"));
	free(err);
}

static void test_worker_killed_by_signal_gives_128_plus_n(void **state)
{
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 2, "if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 30");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 137);
	assert_int_equal(m.r.failed_rank, 1);
	assert_int_equal(m.r.term_signal, 9);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "rank 1 on host testhost failed first: "
				    "killed by signal 9 (Killed)\n"));
	free(err);
}

static void test_worker_exiting_zero_does_not_stop_the_others(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "if [ $RANK = 1 ]; then sleep 0.5; touch $TDIR/late; fi; exit 0");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(access(path_in(&rn, "late"), F_OK), 0);
}

/* A worker that ignores SIGTERM is SIGKILLed after the grace period. */
static void test_worker_ignoring_sigterm_is_killed_after_grace(void **state)
{
	const char *script = "if [ $RANK = 0 ]; then sleep 0.2; exit 4; fi;"
			     "trap '' TERM; echo $$ > $TDIR/pid1; while :; do sleep 0.05; done";
	long long t0;
	struct msg m;
	pid_t pid;

	(void)state;
	prepare(&rn, 2, script);
	rn.o.grace_ms = 500;
	t0 = now_ms();
	start(&rn, 2);
	pid = read_pid(&rn, "pid1");
	m = finish_result(&rn);
	assert_true(now_ms() - t0 >= 200 + 500);
	assert_true(now_ms() - t0 < HANG_GUARD_MS);
	assert_true(gone(pid));
	reap_child(&rn);
	assert_int_equal(m.r.status, 4);
	assert_int_equal(m.r.failed_rank, 0);
}

/* Everything exits 0 but leaves a background process: it does not outlive
 * supervise_run, nor does it keep it waiting. */
static void test_leftover_background_process_is_killed_on_success(void **state)
{
	struct msg m;
	long long t0;
	pid_t gc;

	(void)state;
	prepare(&rn, 1, "sleep 30 & echo $! > $TDIR/gc0; exit 0");
	t0 = now_ms();
	start(&rn, 1);
	gc = read_pid(&rn, "gc0");
	m = finish_result(&rn);
	assert_true(now_ms() - t0 < HANG_GUARD_MS);
	assert_true(gone(gc));
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
}

static const char *trap_script =
	"trap 'echo $RANK > $TDIR/term$RANK; exit 0' TERM;"
	"trap 'echo $RANK > $TDIR/usr$RANK' USR1;"
	"echo $$ > $TDIR/ready$RANK;"
	"while [ ! -e $TDIR/stop ]; do sleep 0.05; done";

static void test_sigterm_is_forwarded_to_every_worker(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, trap_script);
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGTERM);
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(access(path_in(&rn, "term0"), F_OK), 0);
	assert_int_equal(access(path_in(&rn, "term1"), F_OK), 0);
	assert_int_equal(m.r.got_signal, SIGTERM);
	assert_int_equal(m.r.status, 0); /* they trapped it and exited 0 */
}

static void test_sigterm_untrapped_gives_143(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "echo $$ > $TDIR/ready$RANK; exec sleep 30");
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGTERM);
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.got_signal, SIGTERM);
	assert_int_equal(m.r.status, 143);
	assert_int_equal(m.r.term_signal, SIGTERM);
}

static void test_sigusr1_is_forwarded_and_supervision_continues(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, trap_script);
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	kill(rn.pid, SIGUSR1);
	assert_true(wait_file(&rn, "usr0", 5000));
	assert_true(wait_file(&rn, "usr1", 5000));
	touch(path_in(&rn, "stop"));
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.got_signal, 0);
	assert_int_equal(m.r.status, 0);
	assert_int_not_equal(access(path_in(&rn, "term0"), F_OK), 0);
}

static void test_sigurg_means_peer_failed_and_stops_workers(void **state)
{
	struct msg m;
	long long t0;

	(void)state;
	prepare(&rn, 2, "echo $$ > $TDIR/ready$RANK; exec sleep 30");
	start(&rn, 2);
	read_pid(&rn, "ready0");
	read_pid(&rn, "ready1");
	t0 = now_ms();
	kill(rn.pid, SIGURG);
	m = finish_result(&rn);
	assert_true(now_ms() - t0 < HANG_GUARD_MS);
	reap_child(&rn);
	assert_true(m.r.peer_failed);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(m.r.failed_rank, -1);
	assert_int_equal(m.r.got_signal, 0);
}

/* The callback plays node mode's scancel --signal=URG, which reaches this
 * ctrun too: that SIGURG must not hide the local root cause. */
static pid_t cancel_step(void *arg)
{
	int fd = open((const char *)arg, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd >= 0) {
		(void)!write(fd, "x", 1);
		close(fd);
	}
	kill(getpid(), SIGURG);
	return 0;
}

/* The callback's helper (node mode's scancel) runs while the supervisor
 * goes on draining the workers: here it waits until rank 0 has written
 * 1 MiB after the failure (far more than a pipe holds) and finished. */
static pid_t start_helper(void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "i=0; until [ -e \"$0/r0_done\" ] || [ $i -ge 1000 ]; do "
		      "i=$((i+1)); sleep 0.01; done; [ -e \"$0/r0_done\" ] && touch \"$0/helper_saw\"",
		      (const char *)arg, (char *)NULL);
		_exit(127);
	}
	return pid > 0 ? pid : 0;
}

static void test_first_failure_helper_runs_while_output_drains(void **state)
{
	struct msg m;

	(void)state;
	/* Rank 1 fails once rank 0 ignores SIGTERM (else the stop could end
	 * rank 0 before its trap is set). */
	prepare(&rn, 2, "if [ $RANK = 1 ]; then i=0; until [ -e $TDIR/r0_ready ] || [ $i -ge 1000 ];"
			" do i=$((i+1)); sleep 0.01; done; exit 4; fi; trap '' TERM; touch $TDIR/r0_ready;"
			"head -c 1048576 /dev/zero | tr '\\0' x; echo; touch $TDIR/r0_done");
	rn.o.on_first_failure = start_helper;
	rn.o.arg = rn.dir;
	rn.o.grace_ms = 8000;
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 4);
	assert_int_equal(access(path_in(&rn, "helper_saw"), F_OK), 0);
}

/* A grandchild that left its worker's process group (setsid) is ended
 * with the rest, not only reaped (standalone mode has no cgroup). */
static void test_setsid_grandchild_is_killed_too(void **state)
{
	struct msg m;
	pid_t gc;

	(void)state;
	prepare(&rn, 1, "setsid sleep 300 & p=$!; i=0;"
			" until [ \"$(ps -o sid= -p $p | tr -d ' ')\" = \"$p\" ] || [ $i -ge 500 ]; do"
			" i=$((i+1)); sleep 0.01; done; echo $p > $TDIR/gc0; exit 0");
	start(&rn, 1);
	gc = read_pid(&rn, "gc0");
	m = finish_result(&rn);
	assert_true(gone(gc));
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
}

/* A group the guardian was told is gone is not killed when ctrun dies
 * later: its id may belong to another process by then. */
static void test_guardian_forgets_groups_that_are_gone(void **state)
{
	struct guardian g;
	struct err e = { 0 };
	pid_t kept, killed;

	(void)state;
	kept = fork();
	if (kept == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	killed = fork();
	if (killed == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(kept, kept);
	setpgid(killed, killed);
	assert_int_equal(guardian_start(&g, 4, NULL, &e), 0);
	guardian_add(&g, kept);
	guardian_add(&g, killed);
	guardian_forget(&g, kept);
	close(g.fd); /* ctrun "dies": EOF without the goodbye */
	assert_int_equal(waitpid(g.pid, NULL, 0), g.pid);
	assert_int_equal(waitpid(killed, NULL, 0), killed); /* SIGKILLed */
	assert_int_equal(kill(kept, 0), 0);
	kill(kept, SIGKILL);
	waitpid(kept, NULL, 0);
}

/* on_death runs when ctrun dies (node mode cancels its step with it), after
 * the groups are killed, and not when ctrun said goodbye. */
static void test_guardian_runs_on_death_only_when_ctrun_dies(void **state)
{
	char dir[] = "/tmp/ctrun-guardian-XXXXXX", died[PATH_MAX], bye[PATH_MAX];
	char *on_died[] = { "touch", died, NULL }, *on_bye[] = { "touch", bye, NULL };
	struct guardian g;
	struct err e = { 0 };
	pid_t worker;
	int status;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(died, sizeof(died), "%s/died", dir);
	snprintf(bye, sizeof(bye), "%s/bye", dir);
	worker = fork();
	if (worker == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(worker, worker);
	assert_int_equal(guardian_start(&g, 2, on_died, &e), 0);
	guardian_add(&g, worker);
	close(g.fd); /* ctrun "dies" */
	assert_int_equal(waitpid(g.pid, &status, 0), g.pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* touch's status */
	assert_int_equal(waitpid(worker, &status, 0), worker);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(access(died, F_OK), 0);

	assert_int_equal(guardian_start(&g, 2, on_bye, &e), 0);
	guardian_stop(&g);
	assert_int_equal(access(bye, F_OK), -1);
	unlink(died);
	rmdir(dir);
}

static void test_first_failure_callback_runs_once_and_own_sigurg_is_ignored(void **state)
{
	char calls[PATH_MAX];
	struct msg m;
	char *s;

	(void)state;
	prepare(&rn, 3, "if [ $RANK = 2 ]; then exec sleep 30; fi; sleep 0.2; exit 5");
	snprintf(calls, sizeof(calls), "%s/calls", rn.dir);
	rn.o.on_first_failure = cancel_step;
	rn.o.arg = calls;
	m = run(&rn, 3);
	assert_int_equal(m.r.status, 5);
	assert_false(m.r.peer_failed);
	s = slurp(&rn, "calls");
	assert_string_equal(s, "x");
	free(s);
}

static void test_sigkill_of_ctrun_lets_the_guardian_kill_everything(void **state)
{
	const char *script = "sleep 30 & echo $! > $TDIR/gc$RANK; echo $$ > $TDIR/pid$RANK; wait";
	pid_t pids[4];
	long long t0;
	bool all_gone = false;

	(void)state;
	prepare(&rn, 2, script);
	start(&rn, 2);
	pids[0] = read_pid(&rn, "pid0");
	pids[1] = read_pid(&rn, "pid1");
	pids[2] = read_pid(&rn, "gc0");
	pids[3] = read_pid(&rn, "gc1");
	kill(rn.pid, SIGKILL);
	waitpid(rn.pid, NULL, 0);
	rn.pid = 0;
	close(rn.res);
	t0 = now_ms();
	while (!all_gone && now_ms() - t0 < HANG_GUARD_MS) {
		all_gone = true;
		for (int i = 0; i < 4; i++)
			all_gone = all_gone && gone(pids[i]);
		usleep(10000);
	}
	assert_true(all_gone);
}

/* The guardian keeps nothing of ctrun's: no stdout/stderr (a reader of
 * ctrun's output must see EOF when ctrun goes) and not its process group. */
static void test_guardian_holds_no_stdio_and_has_its_own_group(void **state)
{
	char path[PATH_MAX], link[PATH_MAX], *kids, *tok, *save = NULL;
	pid_t worker, guardian = 0;
	int fds = 0;

	(void)state;
	prepare(&rn, 1, "echo $$ > $TDIR/pid0; exec sleep 30");
	start(&rn, 1);
	worker = read_pid(&rn, "pid0");
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)rn.pid, (int)rn.pid);
	kids = read_file(path, NULL);
	assert_non_null(kids);
	for (tok = strtok_r(kids, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save))
		if (atoi(tok) != worker)
			guardian = atoi(tok);
	free(kids);
	assert_true(guardian > 0);
	assert_int_equal(getpgid(guardian), guardian);
	for (int fd = 0; fd < 64; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)guardian, fd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		fds++;
		assert_null(strstr(link, rn.dir));
		assert_true(strcmp(link, "/dev/null") == 0 || strncmp(link, "pipe:", 5) == 0);
	}
	assert_int_equal(fds, 4); /* /dev/null as 0-2 and its pipe from ctrun */
	kill(rn.pid, SIGTERM);
	finish_result(&rn);
	reap_child(&rn);
}

static void test_exec_of_missing_command_gives_127(void **state)
{
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 1, "");
	rn.argv[0][0] = "/nonexistent/ctrun-no-such-command";
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 127);
	err = slurp(&rn, "err");
	assert_non_null(strstr(err, "cannot execute /nonexistent/ctrun-no-such-command"));
	free(err);
}

static void test_exec_of_non_executable_file_gives_126(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 1, "");
	touch(path_in(&rn, "data"));
	rn.argv[0][0] = strdup(path_in(&rn, "data"));
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 126);
	free(rn.argv[0][0]);
}

static void test_each_worker_leads_its_own_process_group(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "read -r _ _ _ _ pg _ < /proc/$$/stat; [ \"$pg\" = \"$$\" ] || exit 9");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
}

static void test_stdin_is_dev_null_with_several_workers(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "[ \"$(readlink /proc/self/fd/0)\" = /dev/null ] || exit 9");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
}

static void test_without_prefix_or_logs_workers_inherit_stdout(void **state)
{
	char script[PATH_MAX + 64];
	struct msg m;

	(void)state;
	prepare(&rn, 1, "");
	snprintf(script, sizeof(script), "[ \"$(readlink /proc/$$/fd/1)\" = %s/out ] || exit 9",
		 rn.dir);
	rn.argv[0][2] = script;
	rn.o.prefix = false;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
}

static void test_cpu_affinity_is_applied_in_the_worker(void **state)
{
	struct msg m;
	char *out;

	(void)state;
	prepare(&rn, 1, "grep Cpus_allowed_list /proc/self/status");
	CPU_ZERO(&rn.cpus);
	CPU_SET(0, &rn.cpus);
	rn.w[0].cpus = &rn.cpus;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	out = slurp(&rn, "out");
	assert_string_equal(out, "[rank0]: Cpus_allowed_list:\t0\n");
	free(out);
}

static void test_unusable_log_dir_is_ctrun_failure(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 1, "touch $TDIR/ran");
	rn.o.log_dir = "/dev/null/logs";
	m = run(&rn, 1);
	assert_int_equal(m.rv, -1);
	assert_int_equal(m.e.code, EXIT_CTRUN);
	assert_non_null(strstr(m.e.msg, "/dev/null/logs"));
	assert_int_not_equal(access(path_in(&rn, "ran"), F_OK), 0);
}

/* Running out of descriptors half way is ctrun's failure (125): the
 * workers already started are killed, and are not reported as failing. */
static void test_own_failure_after_some_workers_started_kills_them(void **state)
{
	long long t0;
	struct msg m;
	char *err;

	(void)state;
	prepare(&rn, 4, "exec sleep 30");
	rn.o.prefix = true;
	rn.nofile = 16; /* room for the first worker's pipes, not the fourth's */
	t0 = now_ms();
	m = run(&rn, 4);
	assert_true(now_ms() - t0 < HANG_GUARD_MS);
	assert_int_equal(m.rv, -1);
	assert_int_equal(m.e.code, EXIT_CTRUN);
	assert_non_null(strstr(m.e.msg, ": pipe: "));
	assert_int_equal(m.r.failed_rank, -1);
	err = slurp(&rn, "err");
	assert_null(strstr(err, "failed first"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_all_workers_exit_zero_gives_status_zero, teardown),
		cmocka_unit_test_teardown(test_first_failure_stops_the_others_fast, teardown),
		cmocka_unit_test_teardown(test_worker_killed_by_signal_gives_128_plus_n, teardown),
		cmocka_unit_test_teardown(test_worker_exiting_zero_does_not_stop_the_others, teardown),
		cmocka_unit_test_teardown(test_worker_ignoring_sigterm_is_killed_after_grace, teardown),
		cmocka_unit_test_teardown(test_leftover_background_process_is_killed_on_success, teardown),
		cmocka_unit_test_teardown(test_sigterm_is_forwarded_to_every_worker, teardown),
		cmocka_unit_test_teardown(test_sigterm_untrapped_gives_143, teardown),
		cmocka_unit_test_teardown(test_sigusr1_is_forwarded_and_supervision_continues, teardown),
		cmocka_unit_test_teardown(test_sigurg_means_peer_failed_and_stops_workers, teardown),
		cmocka_unit_test_teardown(test_first_failure_helper_runs_while_output_drains, teardown),
		cmocka_unit_test_teardown(test_setsid_grandchild_is_killed_too, teardown),
		cmocka_unit_test(test_guardian_forgets_groups_that_are_gone),
		cmocka_unit_test(test_guardian_runs_on_death_only_when_ctrun_dies),
		cmocka_unit_test_teardown(test_first_failure_callback_runs_once_and_own_sigurg_is_ignored, teardown),
		cmocka_unit_test_teardown(test_sigkill_of_ctrun_lets_the_guardian_kill_everything, teardown),
		cmocka_unit_test_teardown(test_guardian_holds_no_stdio_and_has_its_own_group, teardown),
		cmocka_unit_test_teardown(test_exec_of_missing_command_gives_127, teardown),
		cmocka_unit_test_teardown(test_exec_of_non_executable_file_gives_126, teardown),
		cmocka_unit_test_teardown(test_each_worker_leads_its_own_process_group, teardown),
		cmocka_unit_test_teardown(test_stdin_is_dev_null_with_several_workers, teardown),
		cmocka_unit_test_teardown(test_without_prefix_or_logs_workers_inherit_stdout, teardown),
		cmocka_unit_test_teardown(test_cpu_affinity_is_applied_in_the_worker, teardown),
		cmocka_unit_test_teardown(test_unusable_log_dir_is_ctrun_failure, teardown),
		cmocka_unit_test_teardown(test_own_failure_after_some_workers_started_kills_them, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
