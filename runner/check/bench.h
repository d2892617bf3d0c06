/* bench.h - `ctrun bench`: an nccl-tests compatible sweep over all ranks
 * of the job.  bench.c parses the flags and runs the sweep in every
 * worker; bench_table.c writes nccl-tests' table (or JSON) on rank 0. */
#ifndef CTRUN_BENCH_H
#define CTRUN_BENCH_H

#include <json.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend.h"
#include "busbw.h"
#include "coll_data.h"
#include "err.h"

enum bench_backend { BACKEND_AUTO, BACKEND_NCCL, BACKEND_SOCKET };

/* nccl-tests' flags and defaults: -b 32M -e 32M -i 1M -f 1 -n 20 -w 5 -c 1 -d float. */
struct bench_params {
	enum coll colls[COLL_COUNT];
	size_t ncolls;
	size_t minbytes, maxbytes, stepbytes, stepfactor;
	long iters, warmup, check, root;
	enum dtype type;
	enum bench_backend backend;
	bool json;
	long timeout; /* rendezvous, seconds */
};

/* The words after `bench`.  Returns 1 after printing --help, 0, or -1. */
int bench_parse_args(char *const *words, size_t n, struct bench_params *p, struct err *e);

/* `ctrun __worker bench ...`: one rank of the sweep. */
int bench_worker(char *const *words, size_t n, struct err *e);

/* struct bench_device (a "Using devices" line) is backend.h's: each
 * backend describes its devices. */

/* One line of the table: [0] out of place, [1] in place; wrong < 0 is N/A. */
struct bench_row {
	size_t size, count;
	enum dtype type;
	const char *redop;
	long root;
	double time_us[2], algbw[2], busbw[2];
	long long wrong[2];
};

/* nccl-tests' number format: the most decimals (2, 1, 0) that fit the
 * width, else an exponent. */
void bench_float_str(double v, int width, char *out, size_t size);

/* "all_reduce_perf": nccl-tests' program name, which parsers key on. */
void bench_program(enum coll c, char *out, size_t size);

void bench_print_preamble(FILE *f, const struct bench_params *p, const char *backend,
			  const struct bench_device *d, size_t n);
void bench_print_table_head(FILE *f, enum coll c);
void bench_print_row(FILE *f, const struct bench_row *r);
/* transport (NULL: none): the network the ranks used, a line of its own
 * after the average bus bandwidth. */
void bench_print_footer(FILE *f, enum coll c, long long errors, double avg_busbw,
			const char *transport);

/* JSON: the document, one test per collective, its rows, its summary. */
json_object *bench_json_doc(const struct bench_params *p, const char *backend, long nranks,
			    const struct bench_device *d, size_t n);
json_object *bench_json_test(json_object *doc, enum coll c);
void bench_json_row(json_object *test, const struct bench_row *r);
void bench_json_summary(json_object *doc, json_object *test, long long errors, double avg_busbw,
			const char *transport);

#endif
