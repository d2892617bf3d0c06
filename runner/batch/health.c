/* health.c - the batch ctrun's side of the nodes' health check (see health.h). */
#include "health.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodeplan.h"
#include "sigloop.h"
#include "step.h"
#include "util.h"

#define LINE_MAX_BYTES 512

int health_parse_line(const char *line, char *host, size_t hsize, long *step, char *why,
		      size_t wsize)
{
	const char *p = line + strlen(HEALTH_TAG), *sp;
	char num[24];

	if (strncmp(line, HEALTH_TAG, strlen(HEALTH_TAG)) != 0 || *p++ != ' ')
		return -1;
	sp = strchr(p, ' ');
	if (sp == NULL || sp == p || (size_t)(sp - p) >= hsize)
		return -1;
	snprintf(host, hsize, "%.*s", (int)(sp - p), p);
	p = sp + 1;
	sp = strchr(p, ' ');
	if (sp == NULL || (size_t)(sp - p) >= sizeof(num))
		return -1;
	snprintf(num, sizeof(num), "%.*s", (int)(sp - p), p);
	if (parse_long(num, 0, 1L << 40, step) < 0)
		return -1;
	p = sp + 1;
	if (strcmp(p, "ok") == 0)
		return 1;
	if (strncmp(p, "bad: ", 5) != 0 || p[5] == '\0')
		return -1;
	snprintf(why, wsize, "%s", p + 5);
	return 0;
}

int health_srun_failure(const char *line, char *host, size_t hsize, char *why, size_t wsize)
{
	const char *at = strstr(line, " failed on node "), *colon;

	if (at == NULL)
		return -1;
	at += strlen(" failed on node ");
	colon = strstr(at, ": ");
	if (colon == NULL || colon == at || (size_t)(colon - at) >= hsize ||
	    memchr(at, ' ', (size_t)(colon - at)) != NULL)
		return -1;
	snprintf(host, hsize, "%.*s", (int)(colon - at), at);
	snprintf(why, wsize, "srun could not start there: %s", colon + 2);
	return 0;
}

/* One node's state in the check. */
struct answer {
	int got;         /* -1 none yet, 0 bad, 1 ok */
	char why[256];
};

struct check {
	char *const *nodes;
	struct answer *a;
	size_t n, answered;
	pid_t pid;
	bool done;
	int ws;
	int fd[2];                   /* srun's stdout, stderr; -1 once closed */
	char buf[2][LINE_MAX_BYTES];
	size_t len[2];
	char last_err[256];          /* srun's last error line that named no node */
	long step;                   /* the check's step, as a node said; -1 */
	int stopped;
};

static void on_signal(void *arg, int sig)
{
	struct check *c = arg;

	if (sigloop_is_checkpoint(sig))
		return;
	if (c->stopped == 0)
		c->stopped = sig;
	kill(c->pid, SIGTERM);
}

static void on_exit_cb(void *arg, pid_t pid, int ws)
{
	struct check *c = arg;

	if (pid == c->pid) {
		c->ws = ws;
		c->done = true;
	}
}

static void record(struct check *c, const char *host, int got, const char *why)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->nodes[i], host) == 0 && c->a[i].got < 0) {
			c->a[i].got = got;
			snprintf(c->a[i].why, sizeof(c->a[i].why), "%s", why);
			c->answered++;
		}
}

static void take_line(struct check *c, int k, const char *line)
{
	char host[256], why[256] = "";
	long step;
	int ok;

	if (k == 0) {
		ok = health_parse_line(line, host, sizeof(host), &step, why, sizeof(why));
		if (ok < 0)
			return;
		if (c->step < 0)
			c->step = step;
		record(c, host, ok, why);
	} else if (health_srun_failure(line, host, sizeof(host), why, sizeof(why)) == 0) {
		record(c, host, 0, why);
	} else if (strncmp(line, "ctrun: ", 7) == 0 || strstr(line, "error") != NULL) {
		/* A node's ctrun that could not check (its one line), or srun's. */
		snprintf(c->last_err, sizeof(c->last_err), "%s", line);
	}
}

static void on_fd(void *arg, size_t k, short revents)
{
	struct check *c = arg;
	char *nl, *b = c->buf[k];
	ssize_t got;

	(void)revents;
	got = read(c->fd[k], b + c->len[k], sizeof(c->buf[k]) - 1 - c->len[k]);
	if (got <= 0) {
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		close(c->fd[k]);
		c->fd[k] = -1;
		return;
	}
	c->len[k] += (size_t)got;
	b[c->len[k]] = '\0';
	while ((nl = strchr(b, '\n')) != NULL) {
		*nl = '\0';
		take_line(c, (int)k, b);
		c->len[k] -= (size_t)(nl + 1 - b);
		memmove(b, nl + 1, c->len[k] + 1);
	}
	/* A line longer than the buffer: dropped. */
	if (c->len[k] == sizeof(c->buf[k]) - 1)
		c->len[k] = 0;
}

static int health_argv(const struct options *o, const char *self, char *const *nodes,
		       struct strv *argv)
{
	size_t n = 0;
	int ret = 0;
	char *list;

	while (nodes[n] != NULL)
		n++;
	ret |= strv_push(argv, "srun");
	ret |= strv_push(argv, "--overlap");
	ret |= strv_pushf(argv, "--nodes=%zu", n);
	ret |= strv_pushf(argv, "--ntasks=%zu", n);
	ret |= strv_push(argv, "--ntasks-per-node=1");
	ret |= strv_push(argv, "--kill-on-bad-exit=0");
	list = nodeplan_list(nodes);
	if (list == NULL)
		return -1;
	ret |= strv_pushf(argv, "--nodelist=%s", list);
	free(list);
	ret |= strv_push(argv, "--export=ALL");
	ret |= strv_push(argv, self);
	ret |= strv_extend(argv, o->args.v);
	return ret != 0 ? -1 : 0;
}

__attribute__((noreturn)) static void exec_check(char **argv, char **envp, int out, int err,
						 const sigset_t *old)
{
	int null = open("/dev/null", O_RDONLY);

	if (null >= 0)
		dup2(null, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	setpgid(0, 0);
	sigprocmask(SIG_SETMASK, old, NULL);
	execvpe(argv[0], argv, envp);
	_exit(127);
}

/* Starts the check's srun with its stdout and stderr on pipes. */
static int start(struct check *c, char **argv, char **envp, const sigset_t *old, struct err *e)
{
	int out[2] = { -1, -1 }, er[2] = { -1, -1 };

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
		err_sys(e, EXIT_CTRUN, "health check: pipe");
		goto fail;
	}
	c->pid = fork();
	if (c->pid < 0) {
		err_sys(e, EXIT_CTRUN, "health check: fork");
		goto fail;
	}
	if (c->pid == 0)
		exec_check(argv, envp, out[1], er[1], old);
	close(out[1]);
	close(er[1]);
	c->fd[0] = out[0];
	c->fd[1] = er[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	return -1;
}

/* Until every node answered and srun ended, or the deadline. */
static int wait_answers(struct check *c, struct sigloop *l, long long deadline)
{
	long long all_at = -1;

	while (!c->done || c->fd[0] >= 0 || c->fd[1] >= 0) {
		struct pollfd p[2] = { { .fd = c->fd[0], .events = POLLIN },
				       { .fd = c->fd[1], .events = POLLIN } };
		long long now = mono_ms(), until = deadline;

		/* Every node answered: srun has a moment to end by itself. */
		if (c->answered == c->n && all_at < 0)
			all_at = now;
		if (all_at >= 0 && all_at + 2000 < until)
			until = all_at + 2000;
		if (now >= until || c->stopped != 0)
			break;
		if (sigloop_wait(l, p, 2, (int)(until - now)) < 0)
			return -1;
	}
	return 0;
}

/* The check's step ends: its srun, and its tasks on nodes that hang. */
static void end_check(struct check *c, const struct topo *t)
{
	char step[32];

	if (!c->done) {
		if (c->step >= 0) {
			snprintf(step, sizeof(step), "%ld", c->step);
			step_helper_keep(step_scancel_start(t->job_id, step, 0));
		}
		kill(-c->pid, SIGKILL);
		while (waitpid(c->pid, &c->ws, 0) < 0 && errno == EINTR)
			;
	}
	for (int k = 0; k < 2; k++)
		if (c->fd[k] >= 0)
			close(c->fd[k]);
}

/* One check step over nodes: each node's answer into c (c.a, c.n filled
 * by the caller).  -1 with e only for ctrun's own failure. */
static int check_step(const struct options *o, const struct topo *t, char *const *env,
		      const char *self, struct check *c, struct err *e)
{
	const struct sigloop_ops ops = { .on_signal = on_signal, .on_exit = on_exit_cb,
					 .on_fd = on_fd, .arg = c };
	struct strv argv = { 0 }, envv = { 0 };
	struct sigloop l;
	int rv = -1;

	/* The attempts' node order is not this step's. */
	if (health_argv(o, self, c->nodes, &argv) < 0 || strv_extend(&envv, env) < 0 ||
	    strv_unsetenv(&envv, TOPO_BATCH_NODES_ENV) < 0 ||
	    strv_setenv(&envv, HEALTH_ENV, "1", 1) < 0) {
		err_sys(e, EXIT_CTRUN, "health check");
		goto out;
	}
	if (sigloop_start(&l, 0, &ops, e) < 0)
		goto out;
	if (start(c, argv.v, envv.v, &l.old, e) == 0) {
		sigloop_add_child(&l, c->pid);
		rv = wait_answers(c, &l, mono_ms() + o->health_timeout * 1000);
		if (rv < 0)
			err_sys(e, EXIT_CTRUN, "health check: waiting for srun");
		end_check(c, t);
	}
	sigloop_close(&l);
out:
	strv_free(&argv);
	strv_free(&envv);
	return rv;
}

/* Whether srun named a node it could not start on while others gave no
 * answer: srun aborted the step then, and their checks may have been cut
 * short; they are asked again, on their own. */
static bool ask_again(const struct check *c)
{
	bool named = false, silent = false;

	for (size_t i = 0; i < c->n; i++) {
		named |= c->a[i].got == 0 && strncmp(c->a[i].why, "srun could not", 14) == 0;
		silent |= c->a[i].got < 0;
	}
	return named && silent && c->stopped == 0;
}

static int verdicts(const struct options *o, const struct check *c, struct health *h,
		    struct err *e)
{
	for (size_t i = 0; i < c->n; i++) {
		char why[512];

		if (c->a[i].got == 1)
			continue;
		if (c->a[i].got == 0)
			snprintf(why, sizeof(why), "%s", c->a[i].why);
		else if (c->done)
			snprintf(why, sizeof(why), "its check gave no answer%s%s%s",
				 c->last_err[0] ? " (" : "", c->last_err, c->last_err[0] ? ")" : "");
		else
			snprintf(why, sizeof(why), "its check gave no answer within %ld s%s%s%s",
				 o->health_timeout, c->last_err[0] ? " (" : "", c->last_err,
				 c->last_err[0] ? ")" : "");
		if (strv_push(&h->bad, c->nodes[i]) < 0 || strv_push(&h->why, why) < 0)
			return err_sys(e, EXIT_CTRUN, "health check");
	}
	return 0;
}

int health_run(const struct options *o, const struct topo *t, char *const *env,
	       const char *self, char *const *nodes, struct health *h, struct err *e)
{
	struct check c = { .nodes = nodes, .fd = { -1, -1 }, .step = -1 };
	struct strv again = { 0 };
	int rv = -1;

	memset(h, 0, sizeof(*h));
	while (nodes[c.n] != NULL)
		c.n++;
	if (c.n == 0)
		return 0;
	if ((c.a = calloc(c.n, sizeof(*c.a))) == NULL) {
		err_sys(e, EXIT_CTRUN, "health check");
		goto out;
	}
	for (size_t i = 0; i < c.n; i++)
		c.a[i].got = -1;
	if (check_step(o, t, env, self, &c, e) < 0)
		goto out;
	h->stopped = c.stopped;
	if (ask_again(&c)) {
		struct health h2;

		for (size_t i = 0; i < c.n; i++)
			if (c.a[i].got < 0 && strv_push(&again, nodes[i]) < 0) {
				err_sys(e, EXIT_CTRUN, "health check");
				goto out;
			}
		if (health_run(o, t, env, self, again.v, &h2, e) < 0)
			goto out;
		for (size_t i = 0; i < c.n; i++) {
			long at = c.a[i].got < 0 ? strv_find(&h2.bad, nodes[i]) : -2;

			if (at == -1)
				c.a[i].got = 1;
			else if (at >= 0)
				record(&c, nodes[i], 0, h2.why.v[at]);
		}
		h->stopped = h2.stopped;
		health_free(&h2);
	}
	rv = verdicts(o, &c, h, e);
out:
	free(c.a);
	strv_free(&again);
	return rv;
}

void health_free(struct health *h)
{
	strv_free(&h->bad);
	strv_free(&h->why);
}
