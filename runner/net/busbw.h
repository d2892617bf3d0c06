/* busbw.h - the arithmetic of `ctrun bench`, nccl-tests' conventions:
 * which collectives, how a swept size becomes element counts per rank,
 * algorithm and bus bandwidth, data types and size suffixes.  Pure
 * functions, no I/O, so a unit test checks them against the formulas. */
#ifndef CTRUN_BUSBW_H
#define CTRUN_BUSBW_H

#include <stdbool.h>
#include <stddef.h>

enum coll { COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER, COLL_BROADCAST,
	    COLL_ALLTOALL, COLL_COUNT };

/* "all_reduce", ...; coll_parse also takes nccl-tests' binary names
 * ("all_reduce_perf") so a sweep script can pass either. */
const char *coll_name(enum coll c);
int coll_parse(const char *s, enum coll *out);
/* Reductions print the op in the redop column, the others "none". */
bool coll_is_reduction(enum coll c);

/* Element counts of one operation for a swept size of `count` elements
 * (nccl-tests' GetCollByteCount): what each rank sends and receives, the
 * count passed to the collective (the table's "count" column) and where
 * the in-place buffers sit inside the receive buffer (elements, times the
 * rank). */
struct coll_counts {
	size_t send, recv, param;
	size_t send_inplace_off, recv_inplace_off;
};
void coll_counts(enum coll c, size_t count, size_t nranks, struct coll_counts *out);

/* busbw = algbw * coll_bus_factor: all_reduce 2(n-1)/n, all_gather,
 * reduce_scatter and alltoall (n-1)/n, broadcast 1. */
double coll_bus_factor(enum coll c, size_t nranks);
/* GB/s (1e9 bytes) from the collective's count (param) and the time of
 * one operation in seconds. */
void coll_bandwidth(enum coll c, size_t param_count, size_t type_size, double seconds,
		    size_t nranks, double *algbw, double *busbw);

/* nccl-tests' -d names; the value is the NCCL enum (ncclInt8 = 0 ...). */
enum dtype { DT_INT8, DT_UINT8, DT_INT32, DT_UINT32, DT_INT64, DT_UINT64, DT_HALF,
	     DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_COUNT };
const char *dtype_name(enum dtype t);
size_t dtype_size(enum dtype t);
int dtype_parse(const char *s, enum dtype *out);

/* nccl-tests' sizes: a number with an optional K, M or G suffix (powers
 * of 1024), "8", "64M", "1.5K".  -1 on anything else. */
int bench_parse_size(const char *s, size_t *out);

#endif
