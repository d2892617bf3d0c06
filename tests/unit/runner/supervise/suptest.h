/* suptest.h - the harness of the supervisor's unit tests: a forked child
 * plays ctrun and calls supervise_run with real worker processes (sh
 * scripts), its stdout/stderr in a temp dir, the result sent back on a pipe,
 * so that signals can be aimed at it and its state stays out of the runner. */
#ifndef CTRUN_SUPTEST_H
#define CTRUN_SUPTEST_H

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

static inline long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* n workers running `sh -c script` with RANK and TDIR (the temp dir) set. */
static inline void prepare(struct run *r, size_t n, const char *script)
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

static inline char *path_in(const struct run *r, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	return path;
}

static inline void start(struct run *r, size_t n)
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
static inline struct msg finish_result(struct run *r)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	assert_int_equal(read(r->res, &m, sizeof(m)), (ssize_t)sizeof(m));
	close(r->res);
	return m;
}

static inline void reap_child(struct run *r)
{
	int ws;

	assert_int_equal(waitpid(r->pid, &ws, 0), r->pid);
	r->pid = 0;
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static inline struct msg run(struct run *r, size_t n)
{
	struct msg m;

	start(r, n);
	m = finish_result(r);
	reap_child(r);
	return m;
}

static inline void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static inline char *slurp(struct run *r, const char *name)
{
	char *s = read_file(path_in(r, name), NULL);

	assert_non_null(s);
	return s;
}

/* Until the worker has written a whole line into the file (the event);
 * false after timeout_ms, a guard against a hang. */
static inline bool wait_file(struct run *r, const char *name, int timeout_ms)
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

static inline pid_t read_pid(struct run *r, const char *name)
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
static inline bool gone(pid_t pid)
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
static inline int teardown(void **state)
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


#endif
