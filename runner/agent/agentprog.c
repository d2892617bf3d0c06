/* agentprog.c - the agent's side of --hang-timeout (see agentprog.h). */
#include "agentprog.h"

#include <stdio.h>

#include "agentproto.h"
#include "heartbeat.h"
#include "supervise.h"

/* supervise_opts.on_progress: every worker's silence to ctrun; ctrun judges. */
static bool report(void *arg, const struct worker *w, const long long *silent_ms,
		   const bool *started, size_t n)
{
	const struct agentprog *p = arg;

	for (size_t i = 0; i < n && p->events_fd >= 0; i++) {
		const struct agent_msg m = { .kind = AGENT_MSG_PROGRESS, .rank = w[i].rank,
					     .ms = silent_ms[i], .started = started[i] };

		agentproto_send(p->events_fd, &m);
	}
	return false;
}

int agentprog_start(struct agentprog *p, const struct agent_spec *s, struct strv *envs,
		    int events_fd, struct supervise_opts *so, struct err *e)
{
	p->dir[0] = '\0';
	p->events_fd = events_fd;
	if (s->heartbeat_base == NULL)
		return 0;
	so->on_progress = report;
	so->progress_arg = p;
	/* No place for the files: output alone counts as progress. */
	if (progress_dir_make(s->heartbeat_base, p->dir, sizeof(p->dir), e) < 0) {
		p->dir[0] = '\0';
		if (!s->quiet)
			fprintf(stderr, "ctrun: --hang-timeout: no heartbeat files in the container on "
				"%s (%s): only output counts as progress\n", s->host, e->msg);
		*e = (struct err){ 0 };
		return 0;
	}
	for (size_t i = 0; i < s->n; i++) {
		char path[PATH_MAX];

		if (progress_file(p->dir, s->w[i].rank, path, sizeof(path)) < 0 ||
		    strv_setenv(&envs[i], PROGRESS_ENV, path, 1) < 0)
			return err_sys(e, EXIT_CTRUN, "heartbeat file");
	}
	so->heartbeat_dir = p->dir;
	return 0;
}

void agentprog_end(struct agentprog *p)
{
	if (p->dir[0] != '\0')
		progress_dir_remove(p->dir);
	p->dir[0] = '\0';
}
