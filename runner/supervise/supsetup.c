/* supsetup.c - the supervisor's set-up, its workers' start and its
 * tear-down (supervise_int.h; the loop is supervise.c). */
#include "supervise_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guardian.h"
#include "logfiles.h"
#include "orphans.h"
#include "output.h"
#include "sigloop.h"
#include "workerexec.h"
#include "util.h"

/* Signals after the last round: too late to forward, but the caller
 * must know of a stop request. */
static void late_signals(struct sup *s)
{
	int sig;

	while ((sig = sigloop_next(&s->loop)) > 0)
		if (sig != SIGCHLD && sig != SIGURG && !sigloop_is_checkpoint(sig) &&
		    s->r->got_signal == 0)
			s->r->got_signal = sig;
}

int sup_start_worker(struct sup *s, size_t i, struct err *e)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	char prefix[OUT_PREFIX_MAX] = "";
	long rank = s->w[i].rank;
	pid_t pid;

	if (s->st != NULL) {
		/* O_CLOEXEC: no worker may hold another one's pipe. */
		if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
			err_sys(e, EXIT_CTRUN, "rank %ld: pipe", rank);
			goto fail;
		}
		if (fcntl(po[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(pe[0], F_SETFL, O_NONBLOCK) < 0) {
			err_sys(e, EXIT_CTRUN, "rank %ld: pipe", rank);
			goto fail;
		}
	}
	pid = fork();
	if (pid < 0) {
		err_sys(e, EXIT_CTRUN, "rank %ld: fork", rank);
		goto fail;
	}
	if (pid == 0) {
		const struct worker_image wi = { s->w[i].rank, s->w[i].argv, s->w[i].envp,
						 s->w[i].cpus };

		worker_exec(&wi, s->self, s->fg, s->devnull, &s->loop.old, po[1], pe[1]);
	}
	/* Parent and child both set the group, so a signal sent right after
	 * fork reaches the group whichever of them ran first. */
	setpgid(pid, pid);
	if (s->fg)
		set_foreground(pid);
	guardian_add(&s->g, pid);
	s->p[i].pid = pid;
	s->p[i].alive = true;
	s->alive++;
	if (s->st != NULL) {
		close(po[1]);
		close(pe[1]);
		if (s->o->prefix)
			snprintf(prefix, sizeof(prefix), "[rank%ld]: ", rank);
		out_stream_init(&s->st[2 * i], po[0], OUT_STDOUT, s->log_fd[i], prefix);
		out_stream_init(&s->st[2 * i + 1], pe[0], OUT_STDERR, s->log_fd[i], prefix);
	}
	return 0;
fail:
	for (int k = 0; k < 2; k++) {
		if (po[k] >= 0)
			close(po[k]);
		if (pe[k] >= 0)
			close(pe[k]);
	}
	return -1;
}

/* Each worker's progress from now on, its heartbeat file made. */
static int setup_progress(struct sup *s, struct err *e)
{
	long *ranks = calloc(s->n, sizeof(*ranks));
	int rv;

	s->silent = calloc(s->n, sizeof(*s->silent));
	s->started = calloc(s->n, sizeof(*s->started));
	if (ranks == NULL || s->silent == NULL || s->started == NULL) {
		free(ranks);
		return err_sys(e, EXIT_CTRUN, "supervise");
	}
	for (size_t i = 0; i < s->n; i++)
		ranks[i] = s->w[i].rank;
	s->track = true;
	rv = progress_init(&s->prog, s->n, ranks, s->o->heartbeat_dir, e);
	free(ranks);
	return rv;
}

int sup_setup(struct sup *s, const struct sigloop_ops *ops, struct err *e)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL };
	bool piped = s->o->prefix || s->o->log_dir != NULL || s->o->on_progress != NULL;

	/* Pipes must never land on 0-2, where dup2 in the child would be a
	 * no-op that leaves O_CLOEXEC set. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return err_sys(e, EXIT_CTRUN, "/dev/null");
	s->p = calloc(s->n, sizeof(*s->p));
	s->log_fd = calloc(s->n, sizeof(*s->log_fd));
	s->pfd = calloc(2 * s->n + 1, sizeof(*s->pfd));
	s->pmap = calloc(2 * s->n + 1, sizeof(*s->pmap));
	s->st = piped ? calloc(2 * s->n, sizeof(*s->st)) : NULL;
	if (s->p == NULL || s->log_fd == NULL || s->pfd == NULL || s->pmap == NULL ||
	    (piped && s->st == NULL) || out_writer_init(&s->out, !s->o->log_only, piped) < 0)
		return err_sys(e, EXIT_CTRUN, "supervise");
	for (size_t i = 0; i < s->n; i++)
		s->log_fd[i] = -1;
	if (piped) {
		s->nst = 2 * s->n;
		for (size_t j = 0; j < s->nst; j++)
			s->st[j].fd = -1;
	}
	if (s->o->log_dir != NULL) {
		int dfd = logdir_open(s->o->log_dir, e), fd = dfd;

		for (size_t i = 0; fd >= 0 && i < s->n; i++)
			fd = s->log_fd[i] = logfile_open(dfd, s->o->log_dir, s->w[i].rank, e);
		if (dfd >= 0)
			close(dfd);
		if (fd < 0)
			return -1;
	}
	if (s->o->on_progress != NULL && setup_progress(s, e) < 0)
		return -1;
	if (s->n > 1 && (s->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return err_sys(e, EXIT_CTRUN, "/dev/null");
	/* Signals: blocked and read from a signalfd.  One the caller ignores
	 * (nohup's SIGHUP) stays ignored.  teardown restores the mask and
	 * dispositions once the loop is open. */
	if (sigloop_start(&s->loop, SIGLOOP_URG | SIGLOOP_KEEP_IGNORED | SIGLOOP_REAP_ANY, ops,
			  e) < 0)
		return -1;
	sigaction(SIGPIPE, &ign, &s->old_pipe);
	sigaction(SIGCHLD, &dfl, &s->old_chld); /* SIG_IGN would auto-reap */
	prctl(PR_GET_CHILD_SUBREAPER, &s->old_subreaper);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return err_sys(e, EXIT_CTRUN, "prctl(PR_SET_CHILD_SUBREAPER)");
	s->self = getpid();
	s->fg = s->n == 1 && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	return guardian_start(&s->g, s->n, s->o->on_death, e);
}

void sup_teardown(struct sup *s)
{
	/* What on_first_failure started (scancel): at most 5 s more. */
	if (s->helper > 0)
		wait_child(s->helper, 5000);
	s->helper = 0;
	guardian_stop(&s->g);
	if (s->fg)
		set_foreground(getpgrp());
	if (s->loop.sfd >= 0) {
		prctl(PR_SET_CHILD_SUBREAPER, s->old_subreaper);
		late_signals(s);
		sigaction(SIGPIPE, &s->old_pipe, NULL);
		sigaction(SIGCHLD, &s->old_chld, NULL);
		sigloop_close(&s->loop);
	}
	for (size_t j = 0; j < s->nst; j++)
		out_stream_free(&s->st[j]);
	for (size_t i = 0; s->log_fd != NULL && i < s->n; i++)
		if (s->log_fd[i] >= 0)
			close(s->log_fd[i]);
	if (s->devnull >= 0)
		close(s->devnull);
	out_writer_fini(&s->out);
	progress_fini(&s->prog);
	free(s->silent);
	free(s->started);
	free(s->st);
	free(s->p);
	free(s->log_fd);
	free(s->pfd);
	free(s->pmap);
}
