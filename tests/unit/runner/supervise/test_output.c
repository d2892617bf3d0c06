/* Unit tests: worker output through ctrun: "[rankN]: " prefixes, line
 * atomicity across ranks (also through a slow, non-blocking reader), long
 * and unterminated lines, stdout/stderr kept apart, per-rank log files,
 * and a reader that went away.
 *
 * A forked child plays ctrun and calls supervise_run; workers are sh
 * scripts with RANK and TDIR (a temp dir) set. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "supervise.h"
#include "util.h"

#define MAXW 4

enum sink { TO_FILE, TO_PIPE, TO_CLOSED_PIPE };

struct run {
	pid_t pid;
	int res;     /* read end: struct msg */
	int out;     /* read end of ctrun's stdout with TO_PIPE */
	char dir[64];
	struct worker w[MAXW];
	char *argv[MAXW][5];
	char *env[MAXW][512];
	char vars[MAXW][2][PATH_MAX];
	char logs[PATH_MAX];
	unsigned alarm_s; /* the child playing ctrun dies after this long (0: never) */
	struct supervise_opts o;
};

struct msg {
	int rv;
	struct supervise_result r;
	struct err e;
};

static struct run rn;

static void prepare(struct run *r, size_t n, const char *script)
{
	extern char **environ;

	memset(r, 0, sizeof(*r));
	strcpy(r->dir, "/tmp/ctrun-out-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	snprintf(r->logs, sizeof(r->logs), "%s/logs", r->dir);
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
	r->o = (struct supervise_opts){ .host = "testhost", .prefix = true, .grace_ms = 1000,
					.quiet = true };
}

static char *path_in(const struct run *r, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	return path;
}

static void start(struct run *r, size_t n, enum sink sink)
{
	int p[2], o[2] = { -1, -1 };

	assert_int_equal(pipe(p), 0);
	if (sink != TO_FILE)
		assert_int_equal(pipe(o), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		struct msg m = { 0 };
		int out = sink == TO_FILE ? open(path_in(r, "out"), O_WRONLY | O_CREAT | O_TRUNC, 0644)
					  : o[1];
		int err = open(path_in(r, "err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		close(p[0]);
		if (o[0] >= 0)
			close(o[0]);
		alarm(r->alarm_s);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(99);
		m.rv = supervise_run(r->w, n, &r->o, &m.r, &m.e);
		if (write(p[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(98);
		_exit(0);
	}
	close(p[1]);
	r->res = p[0];
	r->out = o[0];
	if (o[1] >= 0)
		close(o[1]);
	if (sink == TO_CLOSED_PIPE) {
		close(r->out);
		r->out = -1;
	}
}

static struct msg finish(struct run *r)
{
	struct msg m;
	int ws;

	memset(&m, 0, sizeof(m));
	assert_int_equal(read(r->res, &m, sizeof(m)), (ssize_t)sizeof(m));
	close(r->res);
	assert_int_equal(waitpid(r->pid, &ws, 0), r->pid);
	r->pid = 0;
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	return m;
}

static struct msg run(struct run *r, size_t n)
{
	start(r, n, TO_FILE);
	return finish(r);
}

/* The log directory, made as launch_log_dir makes it: the supervisor makes
 * none, it only opens files in one. */
static void use_logs(struct run *r)
{
	assert_int_equal(mkdir(r->logs, 0755), 0);
	r->o.log_dir = r->logs;
}

static char *slurp(const char *path)
{
	char *s = read_file(path, NULL);

	assert_non_null(s);
	return s;
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

/* Reads ctrun's stdout slowly, so its non-blocking writes hit EAGAIN. */
static char *read_slowly(int fd, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	assert_non_null(buf);
	for (unsigned k = 0;; k++) {
		if (n + 4096 + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = read(fd, buf + n, 4096);
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
		if (k % 16 == 0)
			usleep(1000);
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Ranks 0 and 2 write one line per write(); ranks 1 and 3 use seq, whose
 * 4 KiB writes cut lines in two.  Every line must come out whole, once,
 * with its own rank's prefix, in that rank's order. */
static void test_prefixed_lines_of_concurrent_ranks_never_splice(void **state)
{
	const char *script =
		"if [ $((RANK % 2)) = 0 ]; then i=0; while [ $i -lt 10000 ]; do "
		"echo \"r$RANK l$i payload-of-rank-$RANK\"; i=$((i + 1)); done; "
		"else seq -f \"r$RANK l%g payload-of-rank-$RANK\" 0 9999; fi";
	long next[MAXW] = { 0 };
	size_t len, lines = 0;
	char *out, *line, *save = NULL;
	struct msg m;

	(void)state;
	prepare(&rn, 4, script);
	start(&rn, 4, TO_PIPE);
	out = read_slowly(rn.out, &len);
	close(rn.out);
	m = finish(&rn);
	assert_int_equal(m.r.status, 0);
	assert_true(len > 0 && out[len - 1] == '\n');
	for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char want[128];
		int rank;

		assert_int_equal(sscanf(line, "[rank%d]: ", &rank), 1);
		assert_true(rank >= 0 && rank < MAXW);
		snprintf(want, sizeof(want), "[rank%d]: r%d l%ld payload-of-rank-%d", rank, rank,
			 next[rank], rank);
		assert_string_equal(line, want);
		next[rank]++;
		lines++;
	}
	assert_int_equal(lines, 40000);
	for (int r = 0; r < MAXW; r++)
		assert_int_equal(next[r], 10000);
	free(out);
}

static void test_line_longer_than_buffer_is_split_with_prefix_on_each_chunk(void **state)
{
	size_t as = 0, lines = 0;
	char *out, *line, *save = NULL;
	struct msg m;

	(void)state;
	prepare(&rn, 1, "head -c 200000 /dev/zero | tr '\\0' a; echo");
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	out = slurp(path_in(&rn, "out"));
	for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		assert_memory_equal(line, "[rank0]: ", 9);
		assert_int_equal(strspn(line + 9, "a"), strlen(line + 9));
		as += strlen(line + 9);
		lines++;
	}
	assert_int_equal(as, 200000);
	assert_true(lines >= 4); /* 200000 bytes through 64 KiB buffers */
	free(out);
}

static void test_unterminated_last_line_gets_a_newline(void **state)
{
	struct msg m;
	char *out, *err;

	(void)state;
	prepare(&rn, 1, "printf 'one\\ntwo'; printf 'three' >&2");
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	out = slurp(path_in(&rn, "out"));
	err = slurp(path_in(&rn, "err"));
	assert_string_equal(out, "[rank0]: one\n[rank0]: two\n");
	assert_string_equal(err, "[rank0]: three\n");
	free(out);
	free(err);
}

static void test_stdout_and_stderr_stay_apart(void **state)
{
	struct msg m;
	char *out, *err;

	(void)state;
	prepare(&rn, 2, "echo out$RANK; echo err$RANK >&2");
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
	out = slurp(path_in(&rn, "out"));
	err = slurp(path_in(&rn, "err"));
	/* Each stream whole and apart; the ranks in either order. */
	assert_true(strcmp(out, "[rank0]: out0\n[rank1]: out1\n") == 0 ||
		    strcmp(out, "[rank1]: out1\n[rank0]: out0\n") == 0);
	assert_true(strcmp(err, "[rank0]: err0\n[rank1]: err1\n") == 0 ||
		    strcmp(err, "[rank1]: err1\n[rank0]: err0\n") == 0);
	free(out);
	free(err);
}

static void test_log_dir_gets_each_ranks_output_unprefixed(void **state)
{
	char path[PATH_MAX + 16], script[1024];
	struct msg m;
	char *s;

	(void)state;
	/* Each line written once the previous one is in the log: the order
	 * of the two pipes is then the order of the events. */
	snprintf(script, sizeof(script),
		 "upto() { i=0; until grep -qs \"$1\" %s/rank-$RANK.log || [ $i -ge 1000 ]; do "
		 "i=$((i+1)); sleep 0.01; done; };"
		 "echo out$RANK; upto out$RANK; echo err$RANK >&2; upto err$RANK; printf end$RANK",
		 rn.logs);
	prepare(&rn, 2, script);
	use_logs(&rn);
	m = run(&rn, 2);
	assert_int_equal(m.r.status, 0);
	for (int r = 0; r < 2; r++) {
		char want[64];

		snprintf(path, sizeof(path), "%s/rank-%d.log", rn.logs, r);
		snprintf(want, sizeof(want), "out%d\nerr%d\nend%d\n", r, r, r);
		s = slurp(path);
		assert_string_equal(s, want);
		free(s);
	}
	/* The terminal still gets the prefixed copy. */
	s = slurp(path_in(&rn, "err"));
	assert_non_null(strstr(s, "[rank1]: err1\n"));
	free(s);
}

static void test_log_only_keeps_ctrun_output_empty(void **state)
{
	char path[PATH_MAX + 16];
	struct msg m;
	char *s;

	(void)state;
	prepare(&rn, 1, "echo hello; echo oops >&2");
	use_logs(&rn);
	rn.o.log_only = true;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	s = slurp(path_in(&rn, "out"));
	assert_string_equal(s, "");
	free(s);
	snprintf(path, sizeof(path), "%s/rank-0.log", rn.logs);
	s = slurp(path);
	assert_non_null(strstr(s, "hello\n"));
	assert_non_null(strstr(s, "oops\n"));
	free(s);
}

static void test_no_prefix_with_log_dir_copies_lines_unprefixed(void **state)
{
	struct msg m;
	char *s;

	(void)state;
	prepare(&rn, 1, "echo plain; printf tail");
	use_logs(&rn);
	rn.o.prefix = false;
	m = run(&rn, 1);
	assert_int_equal(m.r.status, 0);
	s = slurp(path_in(&rn, "out"));
	assert_string_equal(s, "plain\ntail\n");
	free(s);
}

/* ctrun's reader is gone: workers must still be drained, not blocked or
 * killed by SIGPIPE, and ctrun itself must survive. */
static void test_closed_stdout_does_not_block_or_kill_workers(void **state)
{
	struct msg m;

	(void)state;
	prepare(&rn, 2, "head -c 2000000 /dev/zero | tr '\\0' x | fold -w 80 && touch $TDIR/done$RANK");
	start(&rn, 2, TO_CLOSED_PIPE);
	m = finish(&rn);
	assert_int_equal(m.rv, 0);
	assert_int_equal(m.r.status, 0);
	assert_int_equal(access(path_in(&rn, "done0"), F_OK), 0);
	assert_int_equal(access(path_in(&rn, "done1"), F_OK), 0);
}

/* ctrun's own failure line shares stderr with busy workers: whole lines. */
static void test_failure_line_never_splices_into_worker_lines(void **state)
{
	const char *script = "if [ $RANK = 2 ]; then sleep 0.2; exit 7; fi;"
			     "yes \"r$RANK-0123456789abcdefghijklmnopqrstuvwxyz\" >&2";
	const char *fail = "ctrun: rank 2 on host testhost failed first: exited with status 7";
	char *err, *line, *save = NULL;
	int found = 0;
	struct msg m;

	(void)state;
	prepare(&rn, 3, script);
	rn.o.quiet = false;
	m = run(&rn, 3);
	assert_int_equal(m.r.status, 7);
	err = slurp(path_in(&rn, "err"));
	for (line = strtok_r(err, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "ctrun: ", 7) == 0) {
			found += strcmp(line, fail) == 0;
			continue;
		}
		assert_true(strncmp(line, "[rank0]: r0-", 12) == 0 ||
			    strncmp(line, "[rank1]: r1-", 12) == 0);
		assert_null(strstr(line + 9, "[rank"));
		assert_null(strstr(line, "ctrun"));
	}
	assert_int_equal(found, 1);
	free(err);
}


/* A planted log file: what the supervisor finds at rank-N.log when it
 * starts.  Another user who knows the name (job ids are predictable) and
 * could write the directory left a symlink to a file of the victim's there
 * (issue 29, 3): ctrun truncated that file to the job's output.  Now the
 * link is not followed, the run fails before any worker (125) naming the
 * file, and the file it points at is unchanged. */
static void refuse_planted(const char *what)
{
	char victim[PATH_MAX], log[PATH_MAX + 16];
	struct msg m;
	char *s;
	FILE *f;

	prepare(&rn, 1, "echo job-output; touch $TDIR/ran");
	use_logs(&rn);
	rn.alarm_s = 20; /* a FIFO used to block the open for ever */
	snprintf(victim, sizeof(victim), "%s/victim", rn.dir);
	snprintf(log, sizeof(log), "%s/rank-0.log", rn.logs);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	assert_int_equal(fclose(f), 0);
	if (strcmp(what, "symlink") == 0)
		assert_int_equal(symlink(victim, log), 0);
	else
		assert_int_equal(mkfifo(log, 0666), 0);
	m = run(&rn, 1);
	assert_int_equal(m.rv, -1);
	assert_int_equal(m.e.code, EXIT_CTRUN);
	assert_non_null(strstr(m.e.msg, "rank-0.log"));
	assert_int_not_equal(access(path_in(&rn, "ran"), F_OK), 0);
	s = slurp(victim);
	assert_string_equal(s, "precious\n");
	free(s);
}

static void test_log_file_that_is_a_symlink_is_not_followed(void **state)
{
	(void)state;
	refuse_planted("symlink");
}

static void test_log_file_that_is_a_fifo_is_refused_without_blocking(void **state)
{
	(void)state;
	refuse_planted("fifo");
}

/* A log directory that is not the caller's alone (another user's, or
 * writable by others) gets no file at all.  Playing the other user needs
 * root. */
static void test_log_dir_of_another_user_or_writable_by_others_is_refused(void **state)
{
	char log[PATH_MAX + 16];
	struct msg m;

	(void)state;
	if (geteuid() != 0)
		skip();
	for (int k = 0; k < 2; k++) {
		prepare(&rn, 1, "touch $TDIR/ran");
		use_logs(&rn);
		if (k == 0)
			assert_int_equal(chown(rn.logs, 65534, 65534), 0);
		else
			assert_int_equal(chmod(rn.logs, 0777), 0);
		m = run(&rn, 1);
		assert_int_equal(m.rv, -1);
		assert_int_equal(m.e.code, EXIT_CTRUN);
		assert_non_null(strstr(m.e.msg, "is not yours alone"));
		assert_int_not_equal(access(path_in(&rn, "ran"), F_OK), 0);
		snprintf(log, sizeof(log), "%s/rank-0.log", rn.logs);
		assert_int_not_equal(access(log, F_OK), 0);
		assert_int_equal(teardown(NULL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_prefixed_lines_of_concurrent_ranks_never_splice, teardown),
		cmocka_unit_test_teardown(test_line_longer_than_buffer_is_split_with_prefix_on_each_chunk, teardown),
		cmocka_unit_test_teardown(test_unterminated_last_line_gets_a_newline, teardown),
		cmocka_unit_test_teardown(test_stdout_and_stderr_stay_apart, teardown),
		cmocka_unit_test_teardown(test_log_dir_gets_each_ranks_output_unprefixed, teardown),
		cmocka_unit_test_teardown(test_log_only_keeps_ctrun_output_empty, teardown),
		cmocka_unit_test_teardown(test_no_prefix_with_log_dir_copies_lines_unprefixed, teardown),
		cmocka_unit_test_teardown(test_log_file_that_is_a_symlink_is_not_followed, teardown),
		cmocka_unit_test_teardown(test_log_file_that_is_a_fifo_is_refused_without_blocking,
					  teardown),
		cmocka_unit_test_teardown(test_log_dir_of_another_user_or_writable_by_others_is_refused,
					  teardown),
		cmocka_unit_test_teardown(test_closed_stdout_does_not_block_or_kill_workers, teardown),
		cmocka_unit_test_teardown(test_failure_line_never_splices_into_worker_lines, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
