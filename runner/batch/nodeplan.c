/* nodeplan.c - the nodes of each attempt: spares and elastic counts (see nodeplan.h). */
#include "nodeplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nodeplan_init(struct nodeplan *p, char *const *nodes, long spares, long min, long max,
		  struct err *e)
{
	char count[64];
	long n;

	memset(p, 0, sizeof(*p));
	if (strv_extend(&p->nodes, nodes) < 0)
		return err_sys(e, EXIT_CTRUN, "node plan");
	n = (long)p->nodes.n;
	p->spares = spares > 0 ? spares : 0;
	if (n == 0)
		return err_set(e, EXIT_CTRUN, "the job has no nodes (SLURM_JOB_NODELIST)");
	if (p->spares >= n)
		return err_set(e, EXIT_USAGE, "--spares %ld: the job has %ld node%s and at least one "
			       "must train (ask sbatch for %ld nodes or more)", p->spares, n,
			       n == 1 ? "" : "s", p->spares + 1);
	if (min < 0 || max < 0)
		min = max = n - p->spares;
	if (min == max)
		snprintf(count, sizeof(count), "%ld", max);
	else
		snprintf(count, sizeof(count), "%ld:%ld", min, max);
	if (max > n)
		return err_set(e, EXIT_USAGE, "--nnodes %s: the job has only %ld node%s (a node "
			       "count outside the allocation)", count, n, n == 1 ? "" : "s");
	if (p->spares > 0 && max > n - p->spares)
		return err_set(e, EXIT_USAGE, "--nnodes %s with --spares %ld: the job's %ld nodes "
			       "leave %ld to train (lower MAX to %ld, or ask for more nodes)", count,
			       p->spares, n, n - p->spares, n - p->spares);
	p->min = min;
	p->max = max;
	p->why_out = calloc((size_t)n, sizeof(*p->why_out));
	p->slot = malloc((size_t)n * sizeof(*p->slot));
	if (p->why_out == NULL || p->slot == NULL)
		return err_sys(e, EXIT_CTRUN, "node plan");
	for (long i = 0; i < n; i++)
		p->slot[i] = -1;
	return 0;
}

void nodeplan_free(struct nodeplan *p)
{
	for (size_t i = 0; p->why_out != NULL && i < p->nodes.n; i++)
		free(p->why_out[i]);
	free(p->why_out);
	free(p->slot);
	strv_free(&p->nodes);
	memset(p, 0, sizeof(*p));
}

bool nodeplan_resilient(const struct nodeplan *p)
{
	return p->spares > 0 || p->min < p->max || p->max < (long)p->nodes.n;
}

int nodeplan_leave_out(struct nodeplan *p, const char *node, const char *why)
{
	long i = strv_find(&p->nodes, node);

	if (i < 0)
		return -1;
	if (p->why_out[i] == NULL)
		p->why_out[i] = strdup(why != NULL && *why != '\0' ? why : "left out");
	return 0;
}

bool nodeplan_usable(const struct nodeplan *p, size_t i)
{
	return i < p->nodes.n && p->why_out[i] == NULL;
}

const char *nodeplan_at(const struct nodeplan *p, long rank)
{
	for (size_t i = 0; i < p->nodes.n; i++)
		if (p->slot[i] == rank)
			return p->nodes.v[i];
	return NULL;
}

/* The first usable node that holds no slot yet, -1 if none. */
static long free_node(const struct nodeplan *p, const long *taken)
{
	for (size_t i = 0; i < p->nodes.n; i++)
		if (nodeplan_usable(p, i) && taken[i] < 0)
			return (long)i;
	return -1;
}

int nodeplan_next(struct nodeplan *p, struct strv *order, char *why, size_t size)
{
	size_t n = p->nodes.n;
	/* The first attempt fills as many slots as the spares leave (at most
	 * MAX); later ones the last attempt's. */
	long want = p->world > 0 ? p->world : p->max, filled = 0;
	long *at = malloc((size_t)want * sizeof(*at)), *taken = malloc(n * sizeof(*taken));
	int rv = -1;

	strv_free(order);
	if (at == NULL || taken == NULL) {
		snprintf(why, size, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		taken[i] = -1;
	/* Usable nodes keep their rank; then each empty slot gets a spare. */
	for (long s = 0; s < want; s++) {
		at[s] = -1;
		for (size_t i = 0; i < n; i++)
			if (p->slot[i] == s && nodeplan_usable(p, i))
				at[s] = (long)i;
		if (at[s] >= 0)
			taken[at[s]] = s;
	}
	for (long s = 0; s < want; s++) {
		if (at[s] < 0 && (at[s] = free_node(p, taken)) >= 0)
			taken[at[s]] = s;
		filled += at[s] >= 0;
	}
	if (filled < p->min) {
		snprintf(why, size, "%ld usable node%s left, and the run needs %ld (--nnodes%s%s)",
			 filled, filled == 1 ? "" : "s", p->min, p->min < p->max ? " MIN" : "",
			 p->spares > 0 ? "; no spare left" : "");
		goto out;
	}
	/* No spare for some slots: the others close ranks, in their order. */
	for (size_t i = 0; i < n; i++)
		p->slot[i] = -1;
	p->world = 0;
	for (long s = 0; s < want; s++) {
		if (at[s] < 0)
			continue;
		p->slot[at[s]] = p->world++;
		if (strv_push(order, p->nodes.v[at[s]]) < 0) {
			snprintf(why, size, "out of memory");
			goto out;
		}
	}
	rv = 0;
out:
	free(at);
	free(taken);
	return rv;
}

char *nodeplan_list(char *const *v)
{
	size_t len = 1;
	char *out;

	for (size_t i = 0; v[i] != NULL; i++)
		len += strlen(v[i]) + 1;
	out = malloc(len);
	if (out == NULL)
		return NULL;
	out[0] = '\0';
	for (size_t i = 0, at = 0; v[i] != NULL; i++) {
		size_t n = strlen(v[i]);

		if (i > 0)
			out[at++] = ',';
		memcpy(out + at, v[i], n + 1);
		at += n;
	}
	return out;
}
