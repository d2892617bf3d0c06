/* bench.c - `ctrun bench`: nccl-tests' sweep (its flags, sizes, timing,
 * data check and bandwidth) across all ranks of the job, over NCCL on
 * GPUs or over the socket ring on CPU-only nodes.  Every worker runs the
 * sweep; rank 0 prints the table (bench_table.c). */
#include "bench.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rank.h"
#include "coll_nccl.h"
#include "coll_socket.h"
#include "rendezvous.h"
#include "util.h"

extern char **environ;

#define STAGE_BYTES ((size_t)64 << 20) /* host staging of GPU data, per piece */

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
	bool nccl;
	struct nccl_comm *nc;
	struct sock_comm sc;
	char *send, *recv;  /* device memory with nccl, host memory with sockets */
	size_t bufbytes;
	char *stage;        /* host staging of GPU data */
	long rep;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_once(struct bench *b, enum coll c, const void *s, void *r, size_t count,
		    struct err *e)
{
	enum dtype t = b->p->type;

	if (b->nccl)
		return nccl_run(b->nc, c, s, r, count, t, b->p->root, e);
	switch (c) {
	case COLL_ALL_REDUCE: return sock_all_reduce(&b->sc, s, r, count, t, e);
	case COLL_ALL_GATHER: return sock_all_gather(&b->sc, s, r, count, t, e);
	case COLL_REDUCE_SCATTER: return sock_reduce_scatter(&b->sc, s, r, count, t, e);
	case COLL_BROADCAST: return sock_broadcast(&b->sc, s, r, count, t, b->p->root, e);
	case COLL_ALLTOALL: return sock_alltoall(&b->sc, s, r, count, t, e);
	case COLL_COUNT: break;
	}
	return err_set(e, 1, "bench: unknown collective");
}

static int wait_done(struct bench *b, struct err *e)
{
	return b->nccl ? nccl_sync(b->nc, e) : 0;
}

/* Clears the output, then writes this rank's input for repetition rep. */
static int prepare(struct bench *b, enum coll c, const struct coll_counts *cc, char *sendp,
		   size_t clear, long rep, struct err *e)
{
	enum dtype t = b->p->type;
	size_t es = dtype_size(t);

	if (!b->nccl) {
		memset(b->recv, 0, clear);
		bench_fill(sendp, 0, cc->send, c, t, b->rank, b->n, rep);
		return 0;
	}
	if (nccl_clear(b->nc, b->recv, clear, e) < 0)
		return -1;
	for (size_t at = 0; at < cc->send; at += STAGE_BYTES / es) {
		size_t k = cc->send - at < STAGE_BYTES / es ? cc->send - at : STAGE_BYTES / es;

		bench_fill(b->stage, at, k, c, t, b->rank, b->n, rep);
		if (nccl_upload(b->nc, sendp + at * es, b->stage, k * es, e) < 0)
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
	if (!b->nccl) {
		*wrong = bench_verify(recvp, 0, cc->recv, c, t, b->rank, b->n, cc->param, rep,
				      b->p->root);
		return 0;
	}
	for (size_t at = 0; at < cc->recv; at += STAGE_BYTES / es) {
		size_t k = cc->recv - at < STAGE_BYTES / es ? cc->recv - at : STAGE_BYTES / es;

		if (nccl_download(b->nc, b->stage, recvp + at * es, k * es, e) < 0)
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
	t0 = now_s();
	for (long i = 0; i < b->p->iters; i++)
		if (run_once(b, c, sendp, recvp, cc.param, e) < 0)
			return -1;
	if (wait_done(b, e) < 0)
		return -1;
	sec = (now_s() - t0) / (double)b->p->iters;
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
	if (b->rank == 0 && doc == NULL)
		bench_print_footer(stdout, c, *errors, nbw > 0 ? bwsum / (double)nbw : 0.0);
	else if (b->rank == 0)
		bench_json_summary(doc, test, *errors, nbw > 0 ? bwsum / (double)nbw : 0.0);
	return 0;
}

/* Both backends need every rank on board: NCCL when all have a device. */
static int choose_backend(struct bench *b, const struct rank_row *row, struct bench_params *p,
			  struct err *e)
{
	char why[200] = "", note[300];
	int64_t usable = p->backend != BACKEND_SOCKET && row->cuda && nccl_usable(why, sizeof(why)) == 0;

	if (rdzv_allreduce_i64(b->r, &usable, 1, RDZV_MIN, e) < 0)
		return -1;
	b->nccl = usable != 0;
	if (!b->nccl && p->backend != BACKEND_SOCKET && b->rank == 0) {
		backend_fallback_note(row, why, note, sizeof(note));
		fprintf(stderr, "ctrun: bench: %s%s\n", p->backend == BACKEND_NCCL ? "--backend nccl: " : "",
			note[0] != '\0' ? note : "another rank has no CUDA device or NCCL: using socket "
			"backend");
	}
	for (size_t i = 0; i < p->ncolls && !b->nccl; i++)
		if (coll_is_reduction(p->colls[i]) && !sock_can_reduce(p->type))
			return err_set(e, EXIT_USAGE, "bench: %s of %s needs the nccl backend (GPUs); "
				       "the socket backend sums 8- to 64-bit types", coll_name(p->colls[i]),
				       dtype_name(p->type));
	return 0;
}

static int setup_buffers(struct bench *b, struct bench_params *p, struct err *e)
{
	if (b->nccl) {
		/* nccl-tests shrinks -e to what fits; every rank the same. */
		double budget = (double)(nccl_mem_budget(b->nc) / 2);

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
		return nccl_alloc(b->nc, b->bufbytes, (void **)&b->send, e) < 0 ||
		       nccl_alloc(b->nc, b->bufbytes, (void **)&b->recv, e) < 0 ? -1 : 0;
	}
	b->bufbytes = p->maxbytes;
	b->send = malloc(b->bufbytes + 1);
	b->recv = malloc(b->bufbytes + 1);
	if (b->send == NULL || b->recv == NULL)
		return err_set(e, 1, "bench: cannot allocate 2 x %zu bytes", b->bufbytes);
	/* Touch every page now, not in the first timed iteration. */
	memset(b->send, 0, b->bufbytes);
	memset(b->recv, 0, b->bufbytes);
	return 0;
}

static void device_of(const struct rank_row *r, bool nccl, struct bench_device *d)
{
	d->rank = r->rank;
	d->pid = r->pid;
	d->device = nccl ? r->ordinal : -1;
	snprintf(d->host, sizeof(d->host), "%s", r->host);
	/* nccl-tests prints domain:bus:device. */
	snprintf(d->bus, sizeof(d->bus), "%.10s", nccl && r->bus_id[0] != '\0' ? r->bus_id : "-");
	snprintf(d->name, sizeof(d->name), "%s", nccl ? r->gpu_name : "CPU (socket backend)");
}

int bench_worker(char *const *words, size_t nwords, struct err *e)
{
	struct bench_params p;
	struct worker_ctx w;
	struct rank_row row, *rows = NULL;
	struct bench_device *devs = NULL;
	struct rdzv r = { 0 };
	struct bench b = { .sc = { .next_fd = -1, .prev_fd = -1, .listen_fd = -1 } };
	json_object *doc = NULL;
	long long errors = 0;
	int rv = -1;

	if (bench_parse_args(words, nwords, &p, e) != 0)
		return -1;
	if (p.timeout == 0)
		p.timeout = 60;
	if (worker_ctx_read(environ, &w, e) < 0)
		goto out;
	rank_row_collect(&w, environ, &row);
	if (rdzv_open(&r, &(struct rdzv_opts){ .addr = w.master_addr, .port = w.master_port,
						.rank = w.rank, .world = w.world, .job = w.job, .key = w.key,
						.host = w.host, .timeout_ms = (int)p.timeout * 1000 },
		      e) < 0) {
		if (r.fail == RDZV_PEER) /* rank 0 says what went wrong */
			rv = EXIT_REPORTED_BY_RANK0;
		goto out;
	}
	b.p = &p;
	b.r = &r;
	b.rank = r.rank;
	b.n = r.world;
	if (p.root >= r.world) { /* every rank knows; rank 0 says it */
		if (r.rank != 0) {
			rv = EXIT_REPORTED_BY_RANK0;
			goto out;
		}
		err_set(e, EXIT_USAGE, "bench -r %ld: there are only %ld ranks", p.root, r.world);
		goto out;
	}
	if (choose_backend(&b, &row, &p, e) < 0)
		goto out;
	if (b.nccl ? nccl_comm_open(&b.nc, &r, row.ordinal, e) < 0 : sock_comm_open(&b.sc, &r, e) < 0)
		goto out;
	if (r.rank == 0 && ((rows = calloc((size_t)r.world, sizeof(*rows))) == NULL ||
			    (devs = calloc((size_t)r.world, sizeof(*devs))) == NULL)) {
		err_set(e, 1, "bench: out of memory");
		goto out;
	}
	if (rdzv_gather(&r, &row, sizeof(row), rows, e) < 0 || setup_buffers(&b, &p, e) < 0)
		goto out;
	if (r.rank == 0) {
		for (long i = 0; i < r.world; i++) {
			rank_row_seal(&rows[i]); /* from the network: every field ends */
			device_of(&rows[i], b.nccl, &devs[i]);
		}
		if (p.json)
			doc = bench_json_doc(&p, b.nccl ? "nccl" : "socket", r.world, devs, (size_t)r.world);
		else
			bench_print_preamble(stdout, &p, b.nccl ? "nccl" : "socket", devs, (size_t)r.world);
		if (b.nccl && !p.json)
			printf("# NCCL version %s\n", nccl_version());
		fflush(stdout);
	}
	for (size_t i = 0; i < p.ncolls; i++) {
		long long wrong = 0;

		if (bench_coll(&b, p.colls[i], doc, &wrong, e) < 0)
			goto out;
		errors += wrong;
	}
	if (doc != NULL)
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	/* Every rank knows the sum; rank 0 says it and fails the job. */
	if (errors != 0) {
		if (r.rank != 0) {
			rv = EXIT_REPORTED_BY_RANK0;
			goto out;
		}
		err_set(e, 1, "bench: data check failed: %lld wrong elements", errors);
		goto out;
	}
	rv = 0;
out:
	if (rv < 0 && strncmp(e->msg, "bench", 5) != 0)
		err_wrap(e, "bench");
	if (doc != NULL)
		json_object_put(doc);
	if (b.nccl && b.nc != NULL) {
		nccl_free(b.nc, b.send);
		nccl_free(b.nc, b.recv);
		nccl_comm_close(b.nc);
	} else {
		free(b.send);
		free(b.recv);
	}
	free(b.stage);
	sock_comm_close(&b.sc);
	rdzv_close(&r);
	free(rows);
	free(devs);
	return rv;
}
