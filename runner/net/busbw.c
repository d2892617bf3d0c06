/* busbw.c - bench arithmetic, nccl-tests' formulas (see busbw.h). */
#include "busbw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_names[COLL_COUNT] = {
	"all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall",
};

const char *coll_name(enum coll c)
{
	return c < COLL_COUNT ? coll_names[c] : "?";
}

int coll_parse(const char *s, enum coll *out)
{
	size_t len = strlen(s);

	if (len > 5 && strcmp(s + len - 5, "_perf") == 0)
		len -= 5;
	for (int c = 0; c < COLL_COUNT; c++)
		if (strlen(coll_names[c]) == len && strncmp(s, coll_names[c], len) == 0) {
			*out = (enum coll)c;
			return 0;
		}
	return -1;
}

bool coll_is_reduction(enum coll c)
{
	return c == COLL_ALL_REDUCE || c == COLL_REDUCE_SCATTER;
}

void coll_counts(enum coll c, size_t count, size_t nranks, struct coll_counts *o)
{
	size_t per = nranks > 0 ? count / nranks : 0;

	memset(o, 0, sizeof(*o));
	switch (c) {
	case COLL_ALL_REDUCE:
	case COLL_BROADCAST:
		o->send = o->recv = o->param = count;
		break;
	case COLL_ALL_GATHER:
		o->send = per;
		o->recv = per * nranks;
		o->param = per;
		o->send_inplace_off = per; /* rank r's input is block r of the output */
		break;
	case COLL_REDUCE_SCATTER:
		o->send = per * nranks;
		o->recv = per;
		o->param = per;
		o->recv_inplace_off = per; /* rank r's output is block r of the input */
		break;
	case COLL_ALLTOALL:
		o->send = o->recv = per * nranks;
		o->param = per;
		break;
	case COLL_COUNT:
		break;
	}
}

double coll_bus_factor(enum coll c, size_t nranks)
{
	double n = (double)nranks;

	if (nranks == 0)
		return 0.0;
	switch (c) {
	case COLL_ALL_REDUCE:
		return 2.0 * (n - 1.0) / n;
	case COLL_ALL_GATHER:
	case COLL_REDUCE_SCATTER:
	case COLL_ALLTOALL:
		return (n - 1.0) / n;
	case COLL_BROADCAST:
	case COLL_COUNT:
		break;
	}
	return 1.0;
}

void coll_bandwidth(enum coll c, size_t param_count, size_t type_size, double seconds,
		    size_t nranks, double *algbw, double *busbw)
{
	double bytes = (double)param_count * (double)type_size;

	/* all_gather, reduce_scatter and alltoall pass the per-rank count to
	 * NCCL; their algbw is over the whole buffer, count * nranks. */
	if (c == COLL_ALL_GATHER || c == COLL_REDUCE_SCATTER || c == COLL_ALLTOALL)
		bytes *= (double)nranks;
	*algbw = seconds > 0.0 ? bytes / 1.0e9 / seconds : 0.0;
	*busbw = *algbw * coll_bus_factor(c, nranks);
}

static const struct {
	const char *name;
	size_t size;
} dtypes[DT_COUNT] = {
	[DT_INT8] = { "int8", 1 },     [DT_UINT8] = { "uint8", 1 },
	[DT_INT32] = { "int32", 4 },   [DT_UINT32] = { "uint32", 4 },
	[DT_INT64] = { "int64", 8 },   [DT_UINT64] = { "uint64", 8 },
	[DT_HALF] = { "half", 2 },     [DT_FLOAT] = { "float", 4 },
	[DT_DOUBLE] = { "double", 8 }, [DT_BFLOAT16] = { "bfloat16", 2 },
};

const char *dtype_name(enum dtype t)
{
	return t < DT_COUNT ? dtypes[t].name : "?";
}

size_t dtype_size(enum dtype t)
{
	return t < DT_COUNT ? dtypes[t].size : 0;
}

int dtype_parse(const char *s, enum dtype *out)
{
	/* nccl-tests' names first, then NCCL's own aliases. */
	static const struct {
		const char *alias;
		enum dtype t;
	} aliases[] = {
		{ "char", DT_INT8 },	  { "int", DT_INT32 },	   { "float16", DT_HALF },
		{ "float32", DT_FLOAT }, { "float64", DT_DOUBLE }, { "bf16", DT_BFLOAT16 },
	};

	for (int t = 0; t < DT_COUNT; t++)
		if (strcmp(s, dtypes[t].name) == 0) {
			*out = (enum dtype)t;
			return 0;
		}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(*aliases); i++)
		if (strcmp(s, aliases[i].alias) == 0) {
			*out = aliases[i].t;
			return 0;
		}
	return -1;
}

int bench_parse_size(const char *s, size_t *out)
{
	char *end = NULL;
	double v, unit = 1.0;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
		return -1;
	v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0.0)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'K': case 'k':
		unit = 1024.0;
		end++;
		break;
	case 'M': case 'm':
		unit = 1024.0 * 1024.0;
		end++;
		break;
	case 'G': case 'g':
		unit = 1024.0 * 1024.0 * 1024.0;
		end++;
		break;
	default:
		return -1;
	}
	if (*end == 'B' || *end == 'b') /* "64MB" reads as 64M */
		end++;
	if (*end != '\0' || v * unit > 1.0e15)
		return -1;
	*out = (size_t)(v * unit);
	return 0;
}
