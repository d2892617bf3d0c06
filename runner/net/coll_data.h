/* coll_data.h - what ranks put into a collective and how its result is
 * checked (bench's #wrong column, the tests of the collectives). */
#ifndef CTRUN_COLL_DATA_H
#define CTRUN_COLL_DATA_H

#include <stddef.h>

#include "busbw.h"

/* Data for the check of a collective: nccl-tests' idea with our own
 * values: small integers that every type holds exactly, different per
 * rank and element and per repetition `rep`, so a misplaced, missing or
 * doubled block shows.  Sums of 16-bit floats use one contributing rank
 * per element so they stay exact at any rank count. */
/* Elements [first, first + n) of rank `rank`'s input. */
void bench_fill(void *buf, size_t first, size_t n, enum coll c, enum dtype t, long rank,
		long nranks, long rep);
/* Wrong elements among elements [first, first + n) of rank `rank`'s
 * output; `per` is the per-rank block (the collective's count). */
long long bench_verify(const void *buf, size_t first, size_t n, enum coll c, enum dtype t,
		       long rank, long nranks, size_t per, long rep, long root);

#endif
