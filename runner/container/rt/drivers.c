/* drivers.c - the driver table (see drivers.h): the drivers' list, their
 * names, and the questions asked of the table as a whole. */
#include "drivers.h"

#include <string.h>

#define DECLARE(n) extern const struct ctr_driver ctr_driver_##n;
CTR_DRIVERS(DECLARE)
#define ENTRY(n) &ctr_driver_##n,
const struct ctr_driver *const ctr_drivers[] = { CTR_DRIVERS(ENTRY) NULL };

const struct ctr_driver *ctr_driver_named(const char *name)
{
	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++)
		if (strcmp((*d)->name, name) == 0)
			return *d;
	return NULL;
}

const char *ctr_runtime_name(const struct ctr_driver *rt)
{
	return rt != NULL ? rt->name : "none";
}

enum ctr_root_need ctr_root_need(const struct ctr_driver *rt)
{
	return rt != NULL ? rt->need : ROOT_IMAGE_FILE;
}

static unsigned rank(const struct ctr_driver *d, enum image_kind kind)
{
	return (unsigned)kind < CTR_KINDS ? d->rank[kind] : 0;
}

bool ctr_driver_runs(const struct ctr_driver *d, enum image_kind kind)
{
	return rank(d, kind) != 0;
}

size_t ctr_driver_auto(enum image_kind kind, const struct ctr_driver **out, size_t n)
{
	size_t k = 0;

	/* Ranks are small: one pass per rank keeps ties in table order. */
	for (unsigned r = 1; r < CTR_NAMED_ONLY; r++)
		for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++)
			if (rank(*d, kind) == r && k < n)
				out[k++] = *d;
	if (k < n)
		out[k] = NULL;
	return k;
}
