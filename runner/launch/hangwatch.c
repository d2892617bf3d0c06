/* hangwatch.c - a node's side of --hang-timeout (see hangwatch.h). */
#include "hangwatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "heartbeat.h"
#include "util.h"
#include "watchclient.h"

void hangwatch_init(struct hangwatch *h, const struct options *o, const struct topo *t)
{
	memset(h, 0, sizeof(*h));
	h->hang_ms = o->hang_timeout * 1000LL;
	h->first_ms = options_hang_first(o) * 1000LL;
	h->host = t->host;
	h->quiet = o->quiet;
	if (h->hang_ms <= 0 || o->dry_run)
		return;
	/* The batch ctrun sees every node; else only a ctrun that runs the
	 * whole job may judge it. */
	if (watchc_on())
		h->on = true;
	else if (t->world_size == t->nproc)
		h->on = h->local = true;
}

int hangwatch_dir(struct hangwatch *h, char *const *envp, struct err *e)
{
	const char *tmp = envp_get(envp, "TMPDIR");
	struct stat st;

	if (!h->on)
		return 0;
	if (tmp == NULL || tmp[0] != '/' || stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode))
		tmp = "/tmp";
	/* No place for the files: output alone counts as progress. */
	if (progress_dir_make(tmp, h->dir, sizeof(h->dir), e) < 0) {
		h->dir[0] = '\0';
		if (!h->quiet)
			fprintf(stderr, "ctrun: --hang-timeout: no heartbeat files on %s (%s): only "
				"output counts as progress\n", h->host, e->msg);
		*e = (struct err){ 0 };
	}
	return 0;
}

int hangwatch_env(const struct hangwatch *h, long rank, struct strv *env)
{
	char path[PATH_MAX];

	if (h->dir[0] == '\0')
		return 0;
	if (progress_file(h->dir, rank, path, sizeof(path)) < 0)
		return -1;
	return strv_setenv(env, PROGRESS_ENV, path, 1);
}

bool hangwatch_tick(struct hangwatch *h, const long *ranks, const long long *silent_ms,
		    const bool *started, size_t n)
{
	long long most = 0;
	long first = -1;
	bool hung = n > 0;

	for (size_t i = 0; i < n; i++) {
		if (!h->local)
			watchc_progress(ranks[i], silent_ms[i], started[i]);
		/* Each within its bound: hung only when every one is past it. */
		if (silent_ms[i] < (started[i] ? h->hang_ms : h->first_ms))
			hung = false;
		if (silent_ms[i] > most) {
			most = silent_ms[i];
			first = ranks[i];
		}
	}
	if (!h->local || !hung)
		return false;
	if (!h->quiet)
		fprintf(stderr, "ctrun: the workers on %s hung: no rank made progress (a line of "
			"output or a touch of its heartbeat file) for %lld s; the first to stall: "
			"rank %ld (%lld s); stopping them\n", h->host, h->hang_ms / 1000, first,
			most / 1000);
	return true;
}

bool hangwatch_cb(void *arg, const struct worker *w, const long long *silent_ms,
		  const bool *started, size_t n)
{
	long *ranks = malloc(n * sizeof(*ranks));
	bool hung;

	if (ranks == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		ranks[i] = w[i].rank;
	hung = hangwatch_tick(arg, ranks, silent_ms, started, n);
	free(ranks);
	return hung;
}

void hangwatch_end(struct hangwatch *h)
{
	if (h->dir[0] != '\0')
		progress_dir_remove(h->dir);
	h->dir[0] = '\0';
}
