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

#include "coll_nccl.h"
#include "coll_socket.h"
#include "gpu.h"
#include "netinfo.h"
#include "rendezvous.h"
#include "strv.h"
#include "util.h"

extern char **environ;

#define CHECK_COUNT ((size_t)1 << 20) /* floats all-reduced: 4 MiB, a few ring slices */

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

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int allreduce_test(struct rdzv *r, const struct rank_row *row, bool nccl,
			  struct check_summary *s, struct err *e)
{
	size_t bytes = CHECK_COUNT * sizeof(float);
	float *host = malloc(bytes), *out = malloc(bytes);
	struct nccl_comm *nc = NULL;
	struct sock_comm sc = { .next_fd = -1, .prev_fd = -1, .listen_fd = -1 };
	void *dsend = NULL, *drecv = NULL;
	double t0, us;
	int64_t wrong = 0;
	int rv = -1;

	if (host == NULL || out == NULL) {
		err_set(e, 1, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < CHECK_COUNT; i++)
		host[i] = check_value(r->rank, i);
	if (nccl) {
		if (nccl_comm_open(&nc, r, row->ordinal, e) < 0 || nccl_alloc(nc, bytes, &dsend, e) < 0 ||
		    nccl_alloc(nc, bytes, &drecv, e) < 0 || nccl_upload(nc, dsend, host, bytes, e) < 0 ||
		    rdzv_barrier(r, e) < 0)
			goto out;
		t0 = now_us();
		if (nccl_run(nc, COLL_ALL_REDUCE, dsend, drecv, CHECK_COUNT, DT_FLOAT, 0, e) < 0 ||
		    nccl_sync(nc, e) < 0)
			goto out;
		us = now_us() - t0;
		if (nccl_download(nc, out, drecv, bytes, e) < 0)
			goto out;
	} else {
		if (sock_comm_open(&sc, r, e) < 0 || rdzv_barrier(r, e) < 0)
			goto out;
		t0 = now_us();
		if (sock_all_reduce(&sc, host, out, CHECK_COUNT, DT_FLOAT, e) < 0)
			goto out;
		us = now_us() - t0;
	}
	wrong = check_verify(out, r->world);
	if (rdzv_allreduce_i64(r, &wrong, 1, RDZV_SUM, e) < 0 ||
	    rdzv_allreduce_f64(r, &us, 1, RDZV_MAX, e) < 0)
		goto out;
	s->allreduce_run = true;
	s->wrong = wrong;
	s->usec = us;
	rv = 0;
out:
	if (nc != NULL) {
		nccl_free(nc, dsend);
		nccl_free(nc, drecv);
		nccl_comm_close(nc);
	}
	sock_comm_close(&sc);
	free(host);
	free(out);
	return rv;
}

int check_worker(char *const *words, size_t nwords, struct err *e)
{
	struct check_summary s = { .elements = CHECK_COUNT, .ok = true };
	struct rank_row row, *rows = NULL;
	struct worker_ctx w;
	struct rdzv r = { 0 };
	char why[200] = "", warn[200] = "";
	bool json = false;
	long timeout = 60;
	int64_t verdict, usable;
	int rv = -1;

	for (size_t i = 0; i < nwords; i++) {
		if (strcmp(words[i], "--json") == 0)
			json = true;
		else if (strncmp(words[i], "--rdzv-timeout=", 15) != 0 ||
			 parse_long(words[i] + 15, 1, 86400, &timeout) < 0)
			return err_set(e, EXIT_USAGE, "__worker check: unknown argument '%s'", words[i]);
	}
	if (worker_ctx_read(environ, &w, e) < 0 || local_preflight(&w, warn, sizeof(warn), e) < 0)
		goto out;
	rank_row_collect(&w, environ, &row);
	snprintf(s.master, sizeof(s.master), "%s:%ld", w.master_addr, w.master_port);
	s.world = w.world;
	if (rdzv_open(&r, &(struct rdzv_opts){ .addr = w.master_addr, .port = w.master_port,
						.rank = w.rank, .world = w.world, .job = w.job, .key = w.key,
						.host = w.host, .timeout_ms = (int)timeout * 1000 },
		      e) < 0) {
		if (r.fail == RDZV_PEER) /* rank 0 says what went wrong */
			rv = EXIT_REPORTED_BY_RANK0;
		goto out;
	}
	if (r.rank == 0 && (rows = calloc((size_t)r.world, sizeof(*rows))) == NULL) {
		err_set(e, 1, "out of memory");
		goto out;
	}
	if (rdzv_gather(&r, &row, sizeof(row), rows, e) < 0)
		goto out;
	for (long i = 0; rows != NULL && i < r.world; i++)
		rank_row_seal(&rows[i]); /* from the network: every field ends */
	verdict = 1;
	if (r.rank == 0) {
		char msg[400];

		if (!check_unique_gpus(rows, (size_t)r.world, msg, sizeof(msg))) {
			strv_push(&s.diagnoses, msg);
			verdict = 0;
		}
	}
	if (rdzv_bcast(&r, &verdict, sizeof(verdict), e) < 0)
		goto out;
	/* NCCL only when every rank has a device and the library. */
	usable = row.cuda && nccl_usable(why, sizeof(why)) == 0;
	if (rdzv_allreduce_i64(&r, &usable, 1, RDZV_MIN, e) < 0)
		goto out;
	snprintf(s.backend, sizeof(s.backend), "%s", usable ? "nccl" : "socket");
	if (!usable && r.rank == 0) {
		backend_fallback_note(&row, why, s.backend_note, sizeof(s.backend_note));
		for (long i = 1; i < r.world && s.backend_note[0] == '\0'; i++)
			if (!rows[i].cuda)
				snprintf(s.backend_note, sizeof(s.backend_note), "no CUDA device on rank "
					 "%ld (%s): using socket backend", i, rows[i].why);
		if (s.backend_note[0] == '\0')
			snprintf(s.backend_note, sizeof(s.backend_note), "no NCCL on another rank: "
				 "using socket backend");
	}
	if (verdict && allreduce_test(&r, &row, usable != 0, &s, e) < 0)
		goto out;
	if (r.rank == 0) {
		char msg[300];

		if (s.wrong > 0) {
			snprintf(msg, sizeof(msg), "all-reduce gave %lld wrong elements (%s backend)",
				 s.wrong, s.backend);
			strv_push(&s.diagnoses, msg);
		}
		for (long i = 0; i < r.world; i++)
			/* A rank bound to one NUMA node away from its GPU works, slowly. */
			if (rows[i].numa[0] != '\0' && rows[i].gpu_numa >= 0 &&
			    strchr(rows[i].numa, ',') == NULL && atoi(rows[i].numa) != rows[i].gpu_numa) {
				snprintf(msg, sizeof(msg), "rank %d on %s: CPUs on NUMA node %s, GPU on "
					 "node %d", rows[i].rank, rows[i].host, rows[i].numa,
					 rows[i].gpu_numa);
				strv_push(&s.warnings, msg);
			}
		if (warn[0] != '\0')
			strv_push(&s.warnings, warn);
		s.ok = s.diagnoses.n == 0;
		if (json)
			check_report_json(stdout, rows, (size_t)r.world, &s);
		else
			check_report_table(stdout, rows, (size_t)r.world, &s);
		fflush(stdout);
		if (!s.ok) {
			err_set(e, 1, "%s", s.diagnoses.v[0]);
			goto out;
		}
	} else if (warn[0] != '\0') {
		fprintf(stderr, "ctrun: check: warning: %s\n", warn);
	}
	rv = 0; /* rank 0 returned above if the check failed */
out:
	if (rv < 0 && e->msg[0] != '\0')
		err_wrap(e, "check");
	rdzv_close(&r);
	strv_free(&s.diagnoses);
	strv_free(&s.warnings);
	free(rows);
	return rv;
}
