/* bench.c - `ctrun bench`: nccl-tests' sweep (its flags, sizes, timing,
 * data check and bandwidth) across all ranks of the job, over NCCL on
 * GPUs or over the socket ring on CPU-only nodes.  Every worker runs the
 * sweep; rank 0 prints the table (bench_table.c). */
#include "bench.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "check.h"
#include "ncclnet.h"
#include "rank.h"
#include "rendezvous.h"
#include "util.h"
#include "wsession.h"

extern char **environ;

#define STAGE_BYTES ((size_t)64 << 20) /* host side of the data, per piece */

static const char usage[] =
	"Usage: ctrun [OPTIONS] bench [COLLECTIVE...] [FLAGS]\n"
	"  COLLECTIVE  all_reduce (default), all_gather, reduce_scatter, broadcast, alltoall, all\n"
	"  -b, --minbytes N     smallest size (default 32M; K, M, G suffixes)\n"
	"  -e, --maxbytes N     largest size (default 32M)\n"
	"  -f, --stepfactor N   multiply the size by N each step (default 1: add -i)\n"
	"  -i, --stepbytes N    add N bytes each step (default 1M)\n"
	"  -n, --iters N        timed iterations per size (default 20)\n"
	"  -w, --warmup_iters N untimed iterations first (default 5)\n"
	"  -c, --check N        data-check iterations per size, 0 for none (default 1)\n"
	"  -d, --datatype T     int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
	"  -r, --root N         broadcast root (default 0)\n"
	"  -o, --op sum         reduction (sum only)\n"
	"  --backend auto|nccl|socket   (auto: nccl when every rank has a GPU)\n"
	"  --json               one JSON document instead of the table\n"
	"  --rdzv-timeout SEC   how long ranks wait for each other (default 60)\n"
	"Global options (--nproc-per-node, --image, ...) go before the word bench.\n";

static const struct option longopts[] = {
	{ "minbytes", required_argument, NULL, 'b' },
	{ "maxbytes", required_argument, NULL, 'e' },
	{ "stepbytes", required_argument, NULL, 'i' },
	{ "stepfactor", required_argument, NULL, 'f' },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup_iters", required_argument, NULL, 'w' },
	{ "check", required_argument, NULL, 'c' },
	{ "datatype", required_argument, NULL, 'd' },
	{ "root", required_argument, NULL, 'r' },
	{ "op", required_argument, NULL, 'o' },
	{ "backend", required_argument, NULL, 'B' },
	{ "json", no_argument, NULL, 'J' },
	{ "rdzv-timeout", required_argument, NULL, 'T' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_num(const char *flag, const char *v, long min, long max, long *out,
		     struct err *e)
{
	if (parse_long(v, min, max, out) < 0)
		return err_set(e, EXIT_USAGE, "bench %s: '%s' is not a number in %ld..%ld", flag, v,
			       min, max);
	return 0;
}

static int parse_one(int c, const char *v, struct bench_params *p, struct err *e)
{
	long n = 0;

	switch (c) {
	case 'b':
	case 'e':
	case 'i':
		if (bench_parse_size(v, c == 'b' ? &p->minbytes : c == 'e' ? &p->maxbytes
						      : &p->stepbytes) < 0)
			return err_set(e, EXIT_USAGE, "bench -%c: '%s' is not a size (bytes, or with "
				       "K, M, G)", c, v);
		return 0;
	case 'f':
		if (parse_num("-f", v, 1, 1 << 20, &n, e) < 0)
			return -1;
		p->stepfactor = (size_t)n;
		return 0;
	case 'n':
		return parse_num("-n", v, 1, 1L << 30, &p->iters, e);
	case 'w':
		return parse_num("-w", v, 0, 1L << 30, &p->warmup, e);
	case 'c':
		return parse_num("-c", v, 0, 1 << 20, &p->check, e);
	case 'r':
		return parse_num("-r", v, 0, 1L << 30, &p->root, e);
	case 'T':
		return parse_num("--rdzv-timeout", v, 1, 86400, &p->timeout, e);
	case 'd':
		if (dtype_parse(v, &p->type) < 0)
			return err_set(e, EXIT_USAGE, "bench -d: unknown type '%s' (int8 uint8 int32 "
				       "uint32 int64 uint64 half float double bfloat16)", v);
		return 0;
	case 'o':
		if (strcmp(v, "sum") != 0)
			return err_set(e, EXIT_USAGE, "bench -o %s: only sum is measured", v);
		return 0;
	case 'B':
		if (strcmp(v, "auto") == 0)
			p->backend = BACKEND_AUTO;
		else if (strcmp(v, "nccl") == 0)
			p->backend = BACKEND_NCCL;
		else if (strcmp(v, "socket") == 0)
			p->backend = BACKEND_SOCKET;
		else
			return err_set(e, EXIT_USAGE, "bench --backend '%s': auto, nccl or socket", v);
		return 0;
	case 'J':
		p->json = true;
		return 0;
	}
	return err_set(e, EXIT_USAGE, "bench: unknown option (see ctrun bench --help)");
}

int bench_parse_args(char *const *words, size_t n, struct bench_params *p, struct err *e)
{
	char **argv = calloc(n + 2, sizeof(*argv));
	int c, idx, rv = -1;

	memset(p, 0, sizeof(*p));
	p->minbytes = p->maxbytes = (size_t)32 << 20;
	p->stepbytes = (size_t)1 << 20;
	p->stepfactor = 1;
	p->iters = 20;
	p->warmup = 5;
	p->check = 1;
	p->type = DT_FLOAT;
	if (argv == NULL)
		return err_sys(e, EXIT_CTRUN, "bench arguments");
	argv[0] = "bench";
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = words[i];
	optind = 0;
	opterr = 0;
	while ((c = getopt_long((int)n + 1, argv, ":b:e:i:f:n:w:c:d:r:o:h", longopts, &idx)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			rv = 1;
			goto out;
		}
		if (c == ':') {
			err_set(e, EXIT_USAGE, "bench: option '%s' needs a value (see ctrun bench --help)",
				argv[optind - 1]);
			goto out;
		}
		if (c == '?') {
			err_set(e, EXIT_USAGE, "bench: unknown option '%s' (see ctrun bench --help)",
				argv[optind - 1]);
			goto out;
		}
		if (parse_one(c, optarg, p, e) < 0)
			goto out;
	}
	for (int i = optind; i < (int)n + 1; i++) {
		enum coll coll;

		if (strcmp(argv[i], "all") == 0) {
			for (int k = 0; k < COLL_COUNT; k++)
				p->colls[k] = (enum coll)k;
			p->ncolls = COLL_COUNT;
		} else if (coll_parse(argv[i], &coll) == 0) {
			if (p->ncolls < COLL_COUNT)
				p->colls[p->ncolls++] = coll;
		} else {
			err_set(e, EXIT_USAGE, "bench: unknown collective '%s' (all_reduce, all_gather, "
				"reduce_scatter, broadcast, alltoall, all)", argv[i]);
			goto out;
		}
	}
	if (p->ncolls == 0)
		p->colls[p->ncolls++] = COLL_ALL_REDUCE;
	if (p->minbytes > p->maxbytes) {
		err_set(e, EXIT_USAGE, "bench: -b %zu is above -e %zu", p->minbytes, p->maxbytes);
		goto out;
	}
	if (p->stepfactor <= 1 && p->stepbytes == 0) {
		err_set(e, EXIT_USAGE, "bench: -i 0 with -f 1 would never reach -e");
		goto out;
	}
	rv = 0;
out:
	free(argv);
	return rv;
}

struct bench {
	const struct bench_params *p;
	struct rdzv *r;
	long rank, n;
	struct backend be;
	char *send, *recv;  /* the backend's buffers (device memory with nccl) */
	size_t bufbytes;
	char *stage;        /* host side of the data: filled, uploaded, checked */
	long rep;
	/* The network under the numbers: NCCL's own lines (ncclnet.h), read
	 * once the first collective made its connections; rank 0's text. */
	const struct rank_row *rows;
	struct ncclnet_cap cap;
	bool net_read;
	char transport[300];
};

static int run_once(struct bench *b, enum coll c, const void *s, void *r, size_t count,
		    struct err *e)
{
	struct coll_call k = { .coll = c, .send = s, .recv = r, .count = count, .type = b->p->type,
			       .root = b->p->root };

	return b->be.ops->run(&b->be, &k, e);
}

static int wait_done(struct bench *b, struct err *e)
{
	return b->be.ops->sync(&b->be, e);
}

/* Clears the output, then writes this rank's input for repetition rep,
 * through the host stage a piece at a time (the buffers may be a GPU's). */
static int prepare(struct bench *b, enum coll c, const struct coll_counts *cc, char *sendp,
		   size_t clear, long rep, struct err *e)
{
	enum dtype t = b->p->type;
	size_t es = dtype_size(t);

	if (b->be.ops->clear(&b->be, b->recv, clear, e) < 0)
		return -1;
	for (size_t at = 0; at < cc->send; at += STAGE_BYTES / es) {
		size_t k = cc->send - at < STAGE_BYTES / es ? cc->send - at : STAGE_BYTES / es;

		bench_fill(b->stage, at, k, c, t, b->rank, b->n, rep);
		if (b->be.ops->upload(&b->be, sendp + at * es, b->stage, k * es, e) < 0)
			return -1;
	}
	return 0;
}

static int verify(struct bench *b, enum coll c, const struct coll_counts *cc, const char *recvp,
		  long rep, long long *wrong, struct err *e)
{
	enum dtype t = b->p->type;
	size_t es = dtype_size(t);

	*wrong = 0;
	for (size_t at = 0; at < cc->recv; at += STAGE_BYTES / es) {
		size_t k = cc->recv - at < STAGE_BYTES / es ? cc->recv - at : STAGE_BYTES / es;

		if (b->be.ops->download(&b->be, b->stage, recvp + at * es, k * es, e) < 0)
			return -1;
		*wrong += bench_verify(b->stage, at, k, c, t, b->rank, b->n, cc->param, rep, b->p->root);
	}
	return 0;
}

/* nccl-tests' BenchTime: one operation to settle, `iters` timed ones
 * (their mean, averaged over ranks), then `check` checked ones. */
static int bench_time(struct bench *b, enum coll c, size_t count, int inplace,
		      struct bench_row *row, struct err *e)
{
	struct coll_counts cc;
	size_t es = dtype_size(b->p->type), clear;
	char *sendp, *recvp;
	double t0, sec;
	int64_t wrong = -1;

	coll_counts(c, count, (size_t)b->n, &cc);
	sendp = inplace ? b->recv + cc.send_inplace_off * (size_t)b->rank * es : b->send;
	recvp = inplace ? b->recv + cc.recv_inplace_off * (size_t)b->rank * es : b->recv;
	clear = (cc.send > cc.recv ? cc.send : cc.recv) * es;
	/* Known data before timing, too: the socket backend's float sums of
	 * leftover bytes could meet denormals and time those. */
	if (prepare(b, c, &cc, sendp, clear, 0, e) < 0 || run_once(b, c, sendp, recvp, cc.param, e) < 0 ||
	    wait_done(b, e) < 0 || rdzv_barrier(b->r, e) < 0)
		return -1;
	t0 = (double)mono_ns() / 1e9;
	for (long i = 0; i < b->p->iters; i++)
		if (run_once(b, c, sendp, recvp, cc.param, e) < 0)
			return -1;
	if (wait_done(b, e) < 0)
		return -1;
	sec = ((double)mono_ns() / 1e9 - t0) / (double)b->p->iters;
	if (rdzv_allreduce_f64(b->r, &sec, 1, RDZV_SUM, e) < 0)
		return -1;
	sec /= (double)b->n;
	row->time_us[inplace] = sec * 1e6;
	coll_bandwidth(c, cc.param, es, sec, (size_t)b->n, &row->algbw[inplace],
		       &row->busbw[inplace]);
	/* Like nccl-tests, in-place alltoall is timed but not checked. */
	for (long k = 0; k < b->p->check && !(c == COLL_ALLTOALL && inplace); k++) {
		long long w = 0;

		b->rep++;
		if (prepare(b, c, &cc, sendp, clear, b->rep, e) < 0 ||
		    run_once(b, c, sendp, recvp, cc.param, e) < 0 || wait_done(b, e) < 0 ||
		    verify(b, c, &cc, recvp, b->rep, &w, e) < 0)
			return -1;
		wrong = w;
		if (rdzv_allreduce_i64(b->r, &wrong, 1, RDZV_SUM, e) < 0)
			return -1;
		if (wrong != 0)
			break;
	}
	row->wrong[inplace] = wrong;
	return 0;
}

/* Every rank's NCCL record to rank 0, once; the socket ring is ctrun's. */
static int bench_net(struct bench *b, struct err *e)
{
	struct ncclnet mine = { .read = 0 }, *all = NULL;
	int rv;

	if (b->net_read)
		return 0;
	b->net_read = true;
	ncclnet_capture_end(&b->cap, &mine);
	if (b->rank == 0 && (all = calloc((size_t)b->n, sizeof(*all))) == NULL)
		return err_set(e, 1, "bench: out of memory");
	rv = rdzv_gather(b->r, &mine, sizeof(mine), all, e);
	if (rv == 0 && b->rank == 0) {
		for (long i = 0; i < b->n; i++)
			ncclnet_seal(&all[i]);
		if (strcmp(b->be.ops->name, "nccl") == 0)
			ncclnet_summary(b->rows, all, (size_t)b->n, b->transport, sizeof(b->transport));
		else
			snprintf(b->transport, sizeof(b->transport), "%s (ctrun's TCP ring, not NCCL)",
				 b->be.ops->name);
	}
	free(all);
	return rv;
}

static int bench_coll(struct bench *b, enum coll c, json_object *doc, long long *errors,
		      struct err *e)
{
	const struct bench_params *p = b->p;
	size_t es = dtype_size(p->type), warm[2] = { p->maxbytes, p->minbytes };
	json_object *test = doc != NULL ? bench_json_test(doc, c) : NULL;
	double bwsum = 0.0;
	long nbw = 0;

	*errors = 0;
	for (int k = 0; k < 2; k++) {
		struct coll_counts cc;

		coll_counts(c, warm[k] / es, (size_t)b->n, &cc);
		for (long i = 0; i < p->warmup; i++)
			if (run_once(b, c, b->send, b->recv, cc.param, e) < 0)
				return -1;
		if (wait_done(b, e) < 0)
			return -1;
	}
	if (b->rank == 0 && doc == NULL)
		bench_print_table_head(stdout, c);
	for (size_t size = p->minbytes;;) {
		struct bench_row row = { .type = p->type, .root = c == COLL_BROADCAST ? p->root : -1,
					 .redop = coll_is_reduction(c) ? "sum" : "none" };
		struct coll_counts cc;
		size_t next;

		coll_counts(c, size / es, (size_t)b->n, &cc);
		row.size = (cc.send > cc.recv ? cc.send : cc.recv) * es;
		row.count = cc.param;
		if (bench_time(b, c, size / es, 0, &row, e) < 0 || bench_time(b, c, size / es, 1, &row, e) < 0)
			return -1;
		for (int k = 0; k < 2; k++) {
			*errors += row.wrong[k] > 0 ? row.wrong[k] : 0;
			bwsum += row.busbw[k];
			nbw++;
		}
		if (b->rank == 0 && doc == NULL) {
			bench_print_row(stdout, &row);
			fflush(stdout);
		} else if (b->rank == 0) {
			bench_json_row(test, &row);
		}
		next = p->stepfactor > 1 ? size * p->stepfactor : size + p->stepbytes;
		if (next <= size || next > p->maxbytes)
			break;
		size = next;
	}
	if (bench_net(b, e) < 0)
		return -1;
	if (b->rank == 0 && doc == NULL)
		bench_print_footer(stdout, c, *errors, nbw > 0 ? bwsum / (double)nbw : 0.0,
				   b->transport);
	else if (b->rank == 0)
		bench_json_summary(doc, test, *errors, nbw > 0 ? bwsum / (double)nbw : 0.0,
				   b->transport);
	return 0;
}

/* Says on rank 0 why the vote fell back, and refuses what the chosen
 * backend cannot run (every rank knows; each fails alike). */
static int check_backend(struct bench *b, const struct wsession *s, const struct bench_params *p,
			 struct err *e)
{
	const struct backend_ops *ops = s->backend;
	char note[300], why[200];

	if (wsession_fell_back(s) && b->rank == 0) {
		backend_fallback_note(&s->row, s->why, note, sizeof(note));
		fprintf(stderr, "ctrun: bench: %s%s\n", p->backend == BACKEND_NCCL ? "--backend nccl: " : "",
			note[0] != '\0' ? note : "another rank has no CUDA device or NCCL: using socket "
			"backend");
	}
	for (size_t i = 0; i < p->ncolls; i++)
		if (!ops->supports(p->colls[i], p->type, why, sizeof(why)))
			return err_set(e, EXIT_USAGE, "bench: %s of %s %s", coll_name(p->colls[i]),
				       dtype_name(p->type), why);
	return 0;
}

/* NCCL refuses two ranks on one GPU (ncclCommInitRank: "invalid usage"):
 * rank 0 names them from the rows it gathered, as `check` does, before
 * NCCL is asked; every rank learns the verdict.  1: go on; 0: stop (rank
 * 0's error is set); -1: the rendezvous failed. */
static int distinct_gpus(struct wsession *s, struct err *e)
{
	char msg[400];
	int64_t ok = 1;

	if (strcmp(s->backend->name, "nccl") != 0)
		return 1;
	if (s->r.rank == 0 && !check_unique_gpus(s->rows, (size_t)s->r.world, msg, sizeof(msg)))
		ok = 0;
	if (rdzv_bcast(&s->r, &ok, sizeof(ok), e) < 0)
		return -1;
	if (ok == 0 && s->r.rank == 0)
		err_set(e, 1, "bench: nccl: %s; NCCL needs a GPU of its own per rank (--backend "
			"socket runs without)", msg);
	return ok != 0;
}

static int setup_buffers(struct bench *b, struct bench_params *p, struct err *e)
{
	/* nccl-tests shrinks -e to what fits; every rank the same. */
	size_t limit = b->be.ops->mem_budget(&b->be);
	double budget = (double)(limit / 2);

	if (rdzv_allreduce_f64(b->r, &budget, 1, RDZV_MIN, e) < 0)
		return -1;
	if ((double)p->maxbytes > budget) {
		p->maxbytes = (size_t)budget;
		if (p->minbytes > p->maxbytes)
			p->minbytes = p->maxbytes;
		if (b->rank == 0 && !p->json)
			printf("#\n# Reducing maxBytes to %zu due to memory limitation\n", p->maxbytes);
	}
	b->bufbytes = p->maxbytes;
	b->stage = malloc(STAGE_BYTES);
	if (b->stage == NULL)
		return err_set(e, 1, "bench: out of memory");
	return b->be.ops->alloc(&b->be, b->bufbytes, (void **)&b->send, e) < 0 ||
	       b->be.ops->alloc(&b->be, b->bufbytes, (void **)&b->recv, e) < 0 ? -1 : 0;
}

static void device_of(const struct rank_row *r, const struct backend_ops *ops,
		      struct bench_device *d)
{
	d->rank = r->rank;
	d->pid = r->pid;
	snprintf(d->host, sizeof(d->host), "%s", r->host);
	ops->describe(r, d);
}

/* Rank 0: the preamble (table) or the document (JSON) naming every device. */
static int bench_head(const struct wsession *s, const struct bench_params *p, json_object **doc,
		      struct err *e)
{
	const struct backend_ops *ops = s->backend;
	struct bench_device *devs = calloc((size_t)s->r.world, sizeof(*devs));

	if (devs == NULL)
		return err_set(e, 1, "bench: out of memory");
	for (long i = 0; i < s->r.world; i++)
		device_of(&s->rows[i], ops, &devs[i]);
	if (p->json)
		*doc = bench_json_doc(p, ops->name, s->r.world, devs, (size_t)s->r.world);
	else
		bench_print_preamble(stdout, p, ops->name, devs, (size_t)s->r.world);
	if (ops->banner != NULL && !p->json)
		printf("# %s\n", ops->banner());
	fflush(stdout);
	free(devs);
	return 0;
}

/* Every collective in turn; the JSON document last.  Every rank knows the
 * sum of wrong elements; rank 0 says it and fails the job. */
static int bench_sweep(struct bench *b, json_object *doc, struct err *e)
{
	long long errors = 0;

	for (size_t i = 0; i < b->p->ncolls; i++) {
		long long wrong = 0;

		if (bench_coll(b, b->p->colls[i], doc, &wrong, e) < 0)
			return -1;
		errors += wrong;
	}
	if (doc != NULL)
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	if (errors == 0)
		return 0;
	if (b->rank != 0)
		return EXIT_REPORTED_BY_RANK0;
	return err_set(e, 1, "bench: data check failed: %lld wrong elements", errors);
}

static void bench_free(struct bench *b)
{
	if (b->be.impl != NULL) {
		b->be.ops->free(&b->be, b->send);
		b->be.ops->free(&b->be, b->recv);
	}
	backend_close(&b->be);
	ncclnet_capture_end(&b->cap, &(struct ncclnet){ .read = 0 });
	free(b->stage);
}

int bench_worker(char *const *words, size_t nwords, struct err *e)
{
	struct bench_params p;
	struct wsession s;
	struct bench b = { .cap.dir = "" };
	json_object *doc = NULL;
	int rv = -1, d;

	if (bench_parse_args(words, nwords, &p, e) != 0)
		return -1;
	if (p.timeout == 0)
		p.timeout = 60;
	if (wsession_open(&s, environ, &(struct wsession_opts){
				  .timeout = p.timeout,
				  .backend = p.backend == BACKEND_SOCKET ? "socket" : NULL }, e) < 0) {
		if (wsession_reported(&s)) /* rank 0 says what went wrong */
			rv = EXIT_REPORTED_BY_RANK0;
		goto out;
	}
	b.p = &p;
	b.r = &s.r;
	b.rank = s.r.rank;
	b.n = s.r.world;
	if (p.root >= s.r.world) { /* every rank knows; rank 0 says it */
		if (s.r.rank != 0) {
			rv = EXIT_REPORTED_BY_RANK0;
			goto out;
		}
		err_set(e, EXIT_USAGE, "bench -r %ld: there are only %ld ranks", p.root, s.r.world);
		goto out;
	}
	if (check_backend(&b, &s, &p, e) < 0)
		goto out;
	if ((d = distinct_gpus(&s, e)) <= 0) {
		if (d == 0 && s.r.rank != 0)
			rv = EXIT_REPORTED_BY_RANK0;
		goto out;
	}
	b.rows = s.rows;
	if (strcmp(s.backend->name, "nccl") == 0)
		ncclnet_capture_begin(&b.cap);
	if (backend_open(&b.be, s.backend, &s.r, &s.row, e) < 0 ||
	    setup_buffers(&b, &p, e) < 0 || (s.r.rank == 0 && bench_head(&s, &p, &doc, e) < 0))
		goto out;
	rv = bench_sweep(&b, doc, e);
out:
	if (rv < 0 && strncmp(e->msg, "bench", 5) != 0)
		err_wrap(e, "bench");
	if (doc != NULL)
		json_object_put(doc);
	bench_free(&b);
	wsession_close(&s);
	return rv;
}
