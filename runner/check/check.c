/* check.c - `ctrun check`: run like a training job, every worker reports
 * its rank, host, GPU, CPUs and NUMA node, meets the others at
 * MASTER_ADDR:MASTER_PORT and all-reduces a known sum; rank 0 prints the
 * table; and the preflight diagnoses.  runner/cmd_check.c launches the
 * workers. */
#include "check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "gpu.h"
#include "netinfo.h"
#include "rendezvous.h"
#include "strv.h"
#include "util.h"
#include "wsession.h"

extern char **environ;

#define CHECK_COUNT ((size_t)1 << 20) /* floats all-reduced: 4 MiB, a few ring slices */
#define WARN_SIZE 200 /* the local preflight's warning */

bool ifname_spec_matches(const char *spec, const char *ifname)
{
	bool exclude = false, exact = false, hit = false;
	const char *p = spec;

	if (*p == '^') {
		exclude = true;
		p++;
	}
	if (*p == '=') {
		exact = true;
		p++;
	}
	while (*p != '\0' && !hit) {
		size_t len = strcspn(p, ",");

		if (len > 0)
			hit = exact ? strlen(ifname) == len && strncmp(ifname, p, len) == 0
				    : strncmp(ifname, p, len) == 0;
		p += len;
		if (*p == ',')
			p++;
	}
	return exclude ? !hit : hit;
}

bool check_ifname(const char *var, const char *spec, const struct strv *ifaces, char *msg,
		  size_t size)
{
	char have[200] = "";
	size_t len = 0;

	for (size_t i = 0; i < ifaces->n; i++)
		if (ifname_spec_matches(spec, ifaces->v[i]))
			return true;
	for (size_t i = 0; i < ifaces->n && len + 20 < sizeof(have); i++)
		len += (size_t)snprintf(have + len, sizeof(have) - len, "%s%s", i > 0 ? ", " : "",
					ifaces->v[i]);
	snprintf(msg, size, "wrong interface: %s=%s selects no interface with an address "
		 "(this host has: %s)", var, spec, len > 0 ? have : "none");
	return false;
}

bool check_unique_gpus(const struct rank_row *rows, size_t n, char *msg, size_t size)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			const struct rank_row *a = &rows[i], *b = &rows[j];
			bool same;

			if (strcmp(a->host, b->host) != 0)
				continue;
			/* The bus id names one physical GPU.  Without it, equal
			 * indices mean the same GPU only within one Slurm task:
			 * two tasks may each see a different GPU as "0". */
			if (a->bus_id[0] != '\0' && b->bus_id[0] != '\0')
				same = strcmp(a->bus_id, b->bus_id) == 0;
			else
				same = strcmp(a->gpu, "-") != 0 && strcmp(a->gpu, b->gpu) == 0 &&
				       strcmp(a->group, b->group) == 0;
			if (!same)
				continue;
			snprintf(msg, size, "duplicate GPU per node: ranks %d and %d on %s both use "
				 "GPU %s%s%s (more workers than GPUs, or one GPU visible to both: "
				 "check --nproc-per-node and --gpus-per-task)", a->rank, b->rank, a->host,
				 a->gpu, a->bus_id[0] != '\0' ? " " : "", a->bus_id);
			return false;
		}
	return true;
}

/* Interfaces that have an address: what NCCL and gloo can bind to. */
static void interfaces(struct strv *out)
{
	struct ifaddrs *ifs;

	if (getifaddrs(&ifs) < 0)
		return;
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && (i->ifa_addr->sa_family == AF_INET ||
					    i->ifa_addr->sa_family == AF_INET6) &&
		    strv_find(out, i->ifa_name) < 0)
			strv_push(out, i->ifa_name);
	freeifaddrs(ifs);
}

/* This rank's own preflight: things it can tell before meeting anyone. */
static int local_preflight(const struct worker_ctx *w, char *warn, size_t size, struct err *e)
{
	static const char *const vars[] = { "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME" };
	struct strv ifs = { 0 };
	char msg[400], route[IF_NAMESIZE] = "";
	struct err ignored = { 0 };
	int rv = -1;

	if (w->nnodes > 1 && net_is_loopback(w->master_addr)) {
		err_set(e, 1, "master resolves to loopback: MASTER_ADDR=%s on %s, but the job spans "
			"%ld nodes (pass --master-addr)", w->master_addr, w->host, w->nnodes);
		goto out;
	}
	interfaces(&ifs);
	net_route_ifname(w->master_addr, route, sizeof(route), &ignored);
	for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
		const char *spec = envp_get(environ, vars[i]);

		if (spec == NULL || *spec == '\0')
			continue;
		if (!check_ifname(vars[i], spec, &ifs, msg, sizeof(msg))) {
			err_set(e, 1, "%s on %s", msg, w->host);
			goto out;
		}
		if (w->nnodes > 1 && route[0] != '\0' && strcmp(route, "lo") != 0 &&
		    !ifname_spec_matches(spec, route) && warn[0] == '\0')
			snprintf(warn, size, "%s: %s=%s, but MASTER_ADDR %s is reached through %s",
				 w->host, vars[i], spec, w->master_addr, route);
	}
	rv = 0;
out:
	strv_free(&ifs);
	return rv;
}

/* The known sum: rank r holds (r + i) % 7 + 1 at index i. */
static float check_value(long r, size_t i)
{
	return (float)((size_t)r % 7 + i % 7) + 1.0f;
}

static long long check_verify(const float *v, long world)
{
	long long wrong = 0;

	for (size_t i = 0; i < CHECK_COUNT; i++) {
		float want = 0.0f;

		for (long r = 0; r < world; r++)
			want += check_value(r, i);
		wrong += v[i] != want;
	}
	return wrong;
}

/* The all-reduce of the known sum over the voted backend: timed alone,
 * then checked on every rank. */
static int allreduce_test(struct wsession *ws, struct check_summary *s, struct err *e)
{
	size_t bytes = CHECK_COUNT * sizeof(float);
	float *host = malloc(bytes), *out = malloc(bytes);
	struct backend be = { 0 };
	struct ncclnet_cap cap = { .dir = "" };
	struct ncclnet net = { .read = 0 };
	void *dsend = NULL, *drecv = NULL;
	double t0, us;
	int64_t wrong = 0;
	int rv = -1;

	if (host == NULL || out == NULL) {
		err_set(e, 1, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < CHECK_COUNT; i++)
		host[i] = check_value(ws->r.rank, i);
	/* NCCL's own lines say which network it took (ncclnet.h). */
	if (strcmp(ws->backend->name, "nccl") == 0)
		ncclnet_capture_begin(&cap);
	if (backend_open(&be, ws->backend, &ws->r, &ws->row, e) < 0 ||
	    be.ops->alloc(&be, bytes, &dsend, e) < 0 || be.ops->alloc(&be, bytes, &drecv, e) < 0 ||
	    be.ops->upload(&be, dsend, host, bytes, e) < 0 || rdzv_barrier(&ws->r, e) < 0)
		goto out;
	t0 = (double)mono_ns() / 1e3;
	if (be.ops->run(&be, &(struct coll_call){ .coll = COLL_ALL_REDUCE, .send = dsend, .recv = drecv,
						  .count = CHECK_COUNT, .type = DT_FLOAT }, e) < 0 ||
	    be.ops->sync(&be, e) < 0)
		goto out;
	us = (double)mono_ns() / 1e3 - t0;
	if (be.ops->download(&be, out, drecv, bytes, e) < 0)
		goto out;
	wrong = check_verify(out, ws->r.world);
	ncclnet_capture_end(&cap, &net);
	if (rdzv_allreduce_i64(&ws->r, &wrong, 1, RDZV_SUM, e) < 0 ||
	    rdzv_allreduce_f64(&ws->r, &us, 1, RDZV_MAX, e) < 0 ||
	    rdzv_gather(&ws->r, &net, sizeof(net), s->nets, e) < 0)
		goto out;
	for (long i = 0; s->nets != NULL && i < ws->r.world; i++)
		ncclnet_seal(&s->nets[i]); /* from the network: every field ends */
	s->allreduce_run = true;
	s->wrong = wrong;
	s->usec = us;
	rv = 0;
out:
	if (be.impl != NULL) {
		be.ops->free(&be, dsend);
		be.ops->free(&be, drecv);
	}
	backend_close(&be);
	ncclnet_capture_end(&cap, &net);
	free(host);
	free(out);
	return rv;
}

static int preflight(const struct worker_ctx *w, void *warn, struct err *e)
{
	return local_preflight(w, warn, WARN_SIZE, e);
}

/* Rank 0: why the vote fell back to sockets, for the report. */
static void fallback_note(const struct wsession *ws, struct check_summary *s)
{
	const struct rank_row *rows = ws->rows;

	backend_fallback_note(&ws->row, ws->why, s->backend_note, sizeof(s->backend_note));
	for (long i = 1; i < ws->r.world && s->backend_note[0] == '\0'; i++)
		if (!rows[i].cuda)
			snprintf(s->backend_note, sizeof(s->backend_note), "no CUDA device on rank "
				 "%ld (%s): using socket backend", i, rows[i].why);
	if (s->backend_note[0] == '\0')
		snprintf(s->backend_note, sizeof(s->backend_note), "no NCCL on another rank: "
			 "using socket backend");
}

/* Rank 0: the diagnoses only the whole job shows, before the all-reduce
 * (two ranks on one GPU would hang NCCL); every rank learns the verdict. */
static int job_verdict(struct wsession *ws, struct check_summary *s, int64_t *verdict,
		       struct err *e)
{
	char msg[400];

	*verdict = 1;
	if (ws->r.rank == 0 && !check_unique_gpus(ws->rows, (size_t)ws->r.world, msg, sizeof(msg))) {
		strv_push(&s->diagnoses, msg);
		*verdict = 0;
	}
	return rdzv_bcast(&ws->r, verdict, sizeof(*verdict), e);
}

/* Rank 0: the warnings, the report, and the first diagnosis as the error. */
static int report(const struct wsession *ws, struct check_summary *s, const char *warn, bool json,
		  struct err *e)
{
	const struct rank_row *rows = ws->rows;
	char msg[300], fabric[1024];

	if (s->wrong > 0) {
		snprintf(msg, sizeof(msg), "all-reduce gave %lld wrong elements (%s backend)",
			 s->wrong, s->backend);
		strv_push(&s->diagnoses, msg);
	}
	if (s->nets != NULL && !check_nccl_net(rows, s->nets, (size_t)ws->r.world, fabric,
					       sizeof(fabric)))
		strv_push(&s->diagnoses, fabric);
	for (long i = 0; i < ws->r.world; i++)
		/* A rank bound to one NUMA node away from its GPU works, slowly. */
		if (rows[i].numa[0] != '\0' && rows[i].gpu_numa >= 0 &&
		    strchr(rows[i].numa, ',') == NULL && atoi(rows[i].numa) != rows[i].gpu_numa) {
			snprintf(msg, sizeof(msg), "rank %d on %s: CPUs on NUMA node %s, GPU on "
				 "node %d", rows[i].rank, rows[i].host, rows[i].numa,
				 rows[i].gpu_numa);
			strv_push(&s->warnings, msg);
		}
	if (warn[0] != '\0')
		strv_push(&s->warnings, warn);
	s->ok = s->diagnoses.n == 0;
	if (json)
		check_report_json(stdout, rows, (size_t)ws->r.world, s);
	else
		check_report_table(stdout, rows, (size_t)ws->r.world, s);
	fflush(stdout);
	return s->ok ? 0 : err_set(e, 1, "%s", s->diagnoses.v[0]);
}

static int parse_words(char *const *words, size_t nwords, bool *json, long *timeout,
		       struct err *e)
{
	for (size_t i = 0; i < nwords; i++) {
		if (strcmp(words[i], "--json") == 0)
			*json = true;
		else if (strncmp(words[i], "--rdzv-timeout=", 15) != 0 ||
			 parse_long(words[i] + 15, 1, 86400, timeout) < 0)
			return err_set(e, EXIT_USAGE, "__worker check: unknown argument '%s'", words[i]);
	}
	return 0;
}

int check_worker(char *const *words, size_t nwords, struct err *e)
{
	struct check_summary s = { .elements = CHECK_COUNT, .ok = true };
	struct wsession ws;
	char warn[WARN_SIZE] = "";
	bool json = false;
	long timeout = 60;
	int64_t verdict;
	int rv = -1;

	if (parse_words(words, nwords, &json, &timeout, e) < 0)
		return -1;
	if (wsession_open(&ws, environ, &(struct wsession_opts){ .timeout = timeout,
								.preflight = preflight,
								.arg = warn }, e) < 0) {
		if (wsession_reported(&ws)) /* rank 0 says what went wrong */
			rv = EXIT_REPORTED_BY_RANK0;
		goto out;
	}
	if (ws.r.rank == 0 && (s.nets = calloc((size_t)ws.r.world, sizeof(*s.nets))) == NULL) {
		err_set(e, 1, "out of memory");
		goto out;
	}
	snprintf(s.master, sizeof(s.master), "%s:%ld", ws.w.master_addr, ws.w.master_port);
	s.world = ws.w.world;
	snprintf(s.backend, sizeof(s.backend), "%s", ws.backend->name);
	if (wsession_fell_back(&ws) && ws.r.rank == 0)
		fallback_note(&ws, &s);
	if (job_verdict(&ws, &s, &verdict, e) < 0 || (verdict && allreduce_test(&ws, &s, e) < 0))
		goto out;
	if (ws.r.rank == 0 && report(&ws, &s, warn, json, e) < 0)
		goto out;
	if (ws.r.rank != 0 && warn[0] != '\0')
		fprintf(stderr, "ctrun: check: warning: %s\n", warn);
	rv = 0; /* rank 0 returned above if the check failed */
out:
	if (rv < 0 && e->msg[0] != '\0')
		err_wrap(e, "check");
	wsession_close(&ws);
	free(s.nets);
	strv_free(&s.diagnoses);
	strv_free(&s.warnings);
	return rv;
}
