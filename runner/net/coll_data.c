/* coll_data.c - what each rank puts into a benchmarked collective and
 * what it must get back (see coll_data.h).  Expected sums have a closed form,
 * so checking costs O(elements), not O(elements x ranks). */
#include "coll_data.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static bool one_hot(enum coll c, enum dtype t)
{
	return coll_is_reduction(c) && (t == DT_HALF || t == DT_BFLOAT16);
}

static uint64_t pattern(long r, size_t i, long rep)
{
	return ((uint64_t)r * 5 + (uint64_t)i * 3 + (uint64_t)rep) % 13;
}

/* Sum over r < n of pattern(r, i, rep): 5r mod 13 runs through every
 * residue once per 13 ranks (0 + 1 + ... + 12 = 78). */
static uint64_t pattern_sum(long n, size_t i, long rep)
{
	uint64_t c = ((uint64_t)i * 3 + (uint64_t)rep) % 13, s = (uint64_t)n / 13 * 78;

	for (uint64_t q = 0; q < (uint64_t)n % 13; q++)
		s += (q * 5 + c) % 13;
	return s;
}

static uint64_t hot(long r, long n, size_t i, long rep)
{
	return (i + (size_t)rep) % (size_t)n == (size_t)r ? 1 + i % 3 : 0;
}

/* Small non-negative integers in each type's bits (exact below 2048 for
 * half, 256 for bfloat16; integers wrap like the GPU's). */
static void encode(enum dtype t, uint64_t v, unsigned char *out)
{
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		float f;
		double d;
	} x = { 0 };

	switch (t) {
	case DT_INT8: case DT_UINT8: x.u8 = (uint8_t)v; break;
	case DT_INT32: case DT_UINT32: x.u32 = (uint32_t)v; break;
	case DT_INT64: case DT_UINT64: x.u64 = v; break;
	case DT_FLOAT: x.f = (float)v; break;
	case DT_DOUBLE: x.d = (double)v; break;
	case DT_BFLOAT16:
		x.f = (float)v;
		x.u16 = (uint16_t)(x.u32 >> 16);
		break;
	case DT_HALF:
		if (v != 0) {
			unsigned e = 0;

			while ((v >> (e + 1)) != 0 && e < 15)
				e++;
			uint64_t m = e <= 10 ? v << (10 - e) : v >> (e - 10);

			x.u16 = (uint16_t)(((e + 15) << 10) | (m & 0x3ff));
		}
		break;
	case DT_COUNT:
		break;
	}
	memcpy(out, &x, dtype_size(t));
}

void bench_fill(void *buf, size_t first, size_t n, enum coll c, enum dtype t, long rank,
		long nranks, long rep)
{
	size_t es = dtype_size(t);
	unsigned char *p = buf;

	for (size_t k = 0; k < n; k++) {
		size_t i = first + k;

		encode(t, one_hot(c, t) ? hot(rank, nranks, i, rep) : pattern(rank, i, rep), p + k * es);
	}
}

static uint64_t expected(enum coll c, enum dtype t, long rank, long n, size_t per, size_t i,
			 long rep, long root)
{
	switch (c) {
	case COLL_ALL_REDUCE:
		return one_hot(c, t) ? 1 + i % 3 : pattern_sum(n, i, rep);
	case COLL_REDUCE_SCATTER: {
		size_t k = (size_t)rank * per + i; /* our block of everyone's input */

		return one_hot(c, t) ? 1 + k % 3 : pattern_sum(n, k, rep);
	}
	case COLL_ALL_GATHER:
		return pattern((long)(i / per), i % per, rep);
	case COLL_BROADCAST:
		return pattern(root, i, rep);
	case COLL_ALLTOALL: /* block j came from rank j's block for us */
		return pattern((long)(i / per), (size_t)rank * per + i % per, rep);
	case COLL_COUNT:
		break;
	}
	return 0;
}

long long bench_verify(const void *buf, size_t first, size_t n, enum coll c, enum dtype t,
		       long rank, long nranks, size_t per, long rep, long root)
{
	size_t es = dtype_size(t);
	const unsigned char *p = buf;
	unsigned char want[8];
	long long wrong = 0;

	if (per == 0)
		per = 1;
	for (size_t k = 0; k < n; k++) {
		encode(t, expected(c, t, rank, nranks, per, first + k, rep, root), want);
		wrong += memcmp(p + k * es, want, es) != 0;
	}
	return wrong;
}
