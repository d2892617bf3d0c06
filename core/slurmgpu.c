/* slurmgpu.c - Slurm's GPU lists, one rule for every layer (see slurmgpu.h). */
#include "slurmgpu.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

bool slurmgpu_names_gpus(const char *list)
{
	return list != NULL && *list != '\0' && strcmp(list, "NoDevFiles") != 0;
}

int slurmgpu_split(const char *list, struct strv *out)
{
	if (!slurmgpu_names_gpus(list))
		return 0;
	for (const char *p = list; *p != '\0';) {
		size_t len = strcspn(p, ",");

		if (len > 0 && strv_pushn(out, p, len) < 0)
			return -1;
		p += len + (p[len] == ',');
	}
	return 0;
}

/* Digits only: "+1" or " 1" is no position (strtol would take them). */
static bool position_in(const char *id, const struct strv *step, long *k)
{
	return *id != '\0' && strspn(id, "0123456789") == strlen(id) &&
	       parse_long(id, 0, (long)step->n - 1, k) == 0;
}

int slurmgpu_host(const struct strv *visible, const struct strv *step, struct strv *out)
{
	bool relative = false, positions = step->n > 0;
	long k;

	for (size_t i = 0; positions && i < visible->n; i++) {
		if (!position_in(visible->v[i], step, &k))
			positions = false;
		else if (strv_find(step, visible->v[i]) < 0)
			relative = true;
	}
	relative = relative && positions;
	for (size_t i = 0; i < visible->n; i++) {
		const char *id = visible->v[i];

		if (relative && position_in(id, step, &k))
			id = step->v[k];
		if (strv_push(out, id) < 0)
			return -1;
	}
	return relative ? 1 : 0;
}

size_t slurmgpu_pick(long local_rank, size_t count)
{
	if (count == 0 || local_rank < 0)
		return 0;
	return (size_t)local_rank % count;
}
