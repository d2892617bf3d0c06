/* wsession.c - the start every check and bench worker shares (see wsession.h). */
#include "wsession.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first backend, from `from` on, that every rank can use.  Every rank
 * walks the same table with the same start, so they vote in step. */
static int vote(struct wsession *s, const struct backend_ops *const *t, size_t from,
		struct err *e)
{
	for (size_t i = from; t[i] != NULL; i++) {
		char scratch[200] = "";
		int64_t ok;

		if (t[i]->usable == NULL) {
			s->backend = t[i];
			return 0;
		}
		ok = t[i]->usable(&s->row, i == from ? s->why : scratch,
				  i == from ? sizeof(s->why) : sizeof(scratch));
		if (rdzv_allreduce_i64(&s->r, &ok, 1, RDZV_MIN, e) < 0)
			return -1;
		if (ok) {
			s->backend = t[i];
			return 0;
		}
	}
	return err_set(e, 1, "no backend that every rank can use");
}

static int start_of(const struct backend_ops *const *t, const char *name, size_t *at,
		    struct err *e)
{
	*at = 0;
	if (name == NULL)
		return 0;
	while (t[*at] != NULL && strcmp(t[*at]->name, name) != 0)
		(*at)++;
	if (t[*at] == NULL)
		return err_set(e, EXIT_USAGE, "unknown backend '%s'", name);
	return 0;
}

static int meet(struct wsession *s, long timeout, struct err *e)
{
	const struct worker_ctx *w = &s->w;

	return rdzv_open(&s->r, &(struct rdzv_opts){ .addr = w->master_addr, .port = w->master_port,
						     .rank = w->rank, .world = w->world,
						     .job = w->job, .key = w->key, .host = w->host,
						     .timeout_ms = (int)timeout * 1000 },
			 e);
}

int wsession_open(struct wsession *s, char *const *envp, const struct wsession_opts *o,
		  struct err *e)
{
	const struct backend_ops *const *t = o->table != NULL ? o->table : backend_table;
	size_t from;

	memset(s, 0, sizeof(*s));
	if (start_of(t, o->backend, &from, e) < 0)
		return -1;
	s->wanted = t[from];
	if (worker_ctx_read(envp, &s->w, e) < 0 ||
	    (o->preflight != NULL && o->preflight(&s->w, o->arg, e) < 0))
		return -1;
	rank_row_collect(&s->w, envp, &s->row);
	if (meet(s, o->timeout, e) < 0)
		return -1;
	if (s->r.rank == 0 && (s->rows = calloc((size_t)s->r.world, sizeof(*s->rows))) == NULL)
		return err_set(e, 1, "out of memory");
	if (rdzv_gather(&s->r, &s->row, sizeof(s->row), s->rows, e) < 0)
		return -1;
	for (long i = 0; s->rows != NULL && i < s->r.world; i++)
		rank_row_seal(&s->rows[i]); /* from the network: every field ends */
	return vote(s, t, from, e);
}

void wsession_close(struct wsession *s)
{
	rdzv_close(&s->r);
	free(s->rows);
	s->rows = NULL;
}

bool wsession_reported(const struct wsession *s)
{
	return s->r.fail == RDZV_PEER;
}

bool wsession_fell_back(const struct wsession *s)
{
	return s->backend != NULL && s->backend != s->wanted;
}
