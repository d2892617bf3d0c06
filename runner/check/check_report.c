/* check_report.c - what rank 0 of `ctrun check` prints: one row per rank
 * (rank, local rank, node rank, host, GPU and bus id, CPUs, NUMA) and the
 * rendezvous and all-reduce verdicts, as a table or as JSON. */
#include <json.h>
#include <string.h>

#include "check.h"

enum { COL_RANK, COL_LOCAL, COL_NODE, COL_HOST, COL_GPU, COL_BUS, COL_CPUS, COL_NUMA,
       COL_GPU_NUMA, NCOLS };

/* Whether rows[i] is the first rank of its host: the node's line. */
static bool first_of_host(const struct rank_row *rows, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (strcmp(rows[k].host, rows[i].host) == 0)
			return false;
	return true;
}

/* The network NCCL took on rows[i]'s host: a rank's that fell back to
 * sockets over the others', so the report never hides one. */
static const struct ncclnet *node_net(const struct rank_row *rows, const struct ncclnet *nets,
				      size_t n, size_t i)
{
	const struct ncclnet *best = NULL;

	for (size_t k = 0; nets != NULL && k < n; k++)
		if (strcmp(rows[k].host, rows[i].host) == 0 && nets[k].read &&
		    (best == NULL || strcmp(nets[k].transport, "Socket") == 0))
			best = &nets[k];
	return best;
}

/* "gpu01: RDMA mlx5_0:1 ACTIVE IB 200 Gb/sec (in the container); libraries:
 * -; NCCL: IB, GDRDMA" */
static void fabric_line(FILE *f, const struct rank_row *rows, const struct ncclnet *nets,
			size_t n, size_t i)
{
	const struct rank_row *r = &rows[i];
	const struct ncclnet *x = node_net(rows, nets, n, i);

	fprintf(f, "fabric: %s: RDMA ", r->host);
	if (r->nports == 0)
		fprintf(f, "none");
	for (int32_t k = 0; k < r->nports; k++)
		fprintf(f, "%s%s:%u %s %s%s%s (%s)", k ? ", " : "", r->ports[k].dev, r->ports[k].port,
			r->ports[k].state, r->ports[k].link, r->ports[k].rate[0] ? " " : "",
			r->ports[k].rate, r->ports[k].received ? "received" : "NOT received");
	fprintf(f, "; libraries: %s; NCCL: ", r->netlibs[0] != '\0' ? r->netlibs : "-");
	if (x == NULL)
		fprintf(f, "not run\n");
	else
		fprintf(f, "%s%s%s%s\n", x->transport[0] != '\0' ? x->transport : "?",
			x->gdr ? ", GDRDMA" : "", x->plugin[0] != '\0' ? ", plugin " : "", x->plugin);
}

static const char *const heads[NCOLS] = { "RANK", "LOCAL", "NODE", "HOST", "GPU", "BUS_ID",
					  "CPUS", "NUMA", "GPU_NUMA" };

static void cells(const struct rank_row *r, char out[NCOLS][128])
{
	snprintf(out[COL_RANK], 128, "%d", r->rank);
	snprintf(out[COL_LOCAL], 128, "%d", r->local_rank);
	snprintf(out[COL_NODE], 128, "%d", r->node_rank);
	snprintf(out[COL_HOST], 128, "%s", r->host);
	snprintf(out[COL_GPU], 128, "%s", r->gpu);
	snprintf(out[COL_BUS], 128, "%s", r->bus_id[0] != '\0' ? r->bus_id : "-");
	snprintf(out[COL_CPUS], 128, "%s", r->cpus[0] != '\0' ? r->cpus : "-");
	snprintf(out[COL_NUMA], 128, "%s", r->numa[0] != '\0' ? r->numa : "-");
	if (r->gpu_numa >= 0)
		snprintf(out[COL_GPU_NUMA], 128, "%d", r->gpu_numa);
	else
		snprintf(out[COL_GPU_NUMA], 128, "-");
}

void check_report_table(FILE *f, const struct rank_row *rows, size_t n,
			const struct check_summary *s)
{
	char c[NCOLS][128];
	size_t width[NCOLS];

	for (int k = 0; k < NCOLS; k++)
		width[k] = strlen(heads[k]);
	for (size_t i = 0; i < n; i++) {
		cells(&rows[i], c);
		for (int k = 0; k < NCOLS; k++)
			if (strlen(c[k]) > width[k])
				width[k] = strlen(c[k]);
	}
	for (int k = 0; k < NCOLS; k++)
		fprintf(f, "%-*s%s", k + 1 < NCOLS ? (int)width[k] : 0, heads[k],
			k + 1 < NCOLS ? "  " : "\n");
	for (size_t i = 0; i < n; i++) {
		cells(&rows[i], c);
		for (int k = 0; k < NCOLS; k++)
			fprintf(f, "%-*s%s", k + 1 < NCOLS ? (int)width[k] : 0, c[k],
				k + 1 < NCOLS ? "  " : "\n");
	}
	fprintf(f, "rendezvous: %zu of %ld ranks met at %s\n", n, s->world, s->master);
	for (size_t i = 0; i < n; i++)
		if (first_of_host(rows, i))
			fabric_line(f, rows, s->nets, n, i);
	if (s->backend_note[0] != '\0')
		fprintf(f, "all-reduce: %s\n", s->backend_note);
	if (s->allreduce_run)
		fprintf(f, "all-reduce: %s, %zu ranks x %zu floats: %s (%.1f ms)\n", s->backend, n,
			s->elements, s->wrong == 0 ? "sum correct" : "WRONG SUM", s->usec / 1000.0);
	for (size_t i = 0; i < s->warnings.n; i++)
		fprintf(f, "warning: %s\n", s->warnings.v[i]);
	for (size_t i = 0; i < s->diagnoses.n; i++)
		fprintf(f, "diagnosis: %s\n", s->diagnoses.v[i]);
	if (s->ok)
		fprintf(f, "check: ok\n");
	else
		fprintf(f, "check: FAILED (%zu problem%s)\n", s->diagnoses.n,
			s->diagnoses.n == 1 ? "" : "s");
}

static json_object *str_or_null(const char *s)
{
	return s[0] != '\0' && strcmp(s, "-") != 0 ? json_object_new_string(s) : NULL;
}

static json_object *strings(const struct strv *v)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < v->n; i++)
		json_object_array_add(a, json_object_new_string(v->v[i]));
	return a;
}

/* One node's fabric: its ports, libraries and the network NCCL took. */
static json_object *fabric_json(const struct rank_row *rows, const struct ncclnet *nets, size_t n,
				size_t i)
{
	const struct rank_row *r = &rows[i];
	const struct ncclnet *x = node_net(rows, nets, n, i);
	json_object *o = json_object_new_object(), *ports = json_object_new_array(), *nc = NULL;

	for (int32_t k = 0; k < r->nports; k++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "device", json_object_new_string(r->ports[k].dev));
		json_object_object_add(p, "port", json_object_new_int(r->ports[k].port));
		json_object_object_add(p, "state", json_object_new_string(r->ports[k].state));
		json_object_object_add(p, "link_layer", json_object_new_string(r->ports[k].link));
		json_object_object_add(p, "rate", str_or_null(r->ports[k].rate));
		json_object_object_add(p, "received", json_object_new_boolean(r->ports[k].received));
		json_object_array_add(ports, p);
	}
	if (x != NULL) {
		nc = json_object_new_object();
		json_object_object_add(nc, "transport", str_or_null(x->transport));
		json_object_object_add(nc, "gdrdma", json_object_new_boolean(x->gdr));
		json_object_object_add(nc, "plugin", str_or_null(x->plugin));
		json_object_object_add(nc, "plugin_error", str_or_null(x->plugin_err));
	}
	json_object_object_add(o, "host", json_object_new_string(r->host));
	json_object_object_add(o, "rdma", ports);
	json_object_object_add(o, "libraries", str_or_null(r->netlibs));
	json_object_object_add(o, "nccl", nc);
	return o;
}

int check_report_json(FILE *f, const struct rank_row *rows, size_t n,
		      const struct check_summary *s)
{
	json_object *fabric = json_object_new_array();
	json_object *doc = json_object_new_object(), *ranks = json_object_new_array();
	json_object *ar = json_object_new_object(), *rz = json_object_new_object();
	int rv;

	for (size_t i = 0; i < n; i++) {
		const struct rank_row *r = &rows[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "rank", json_object_new_int(r->rank));
		json_object_object_add(o, "local_rank", json_object_new_int(r->local_rank));
		json_object_object_add(o, "node_rank", json_object_new_int(r->node_rank));
		json_object_object_add(o, "host", json_object_new_string(r->host));
		json_object_object_add(o, "pid", json_object_new_int(r->pid));
		json_object_object_add(o, "gpu", str_or_null(r->gpu));
		json_object_object_add(o, "bus_id", str_or_null(r->bus_id));
		json_object_object_add(o, "uuid", str_or_null(r->uuid));
		json_object_object_add(o, "gpu_name", str_or_null(r->gpu_name));
		json_object_object_add(o, "gpu_numa",
				       r->gpu_numa >= 0 ? json_object_new_int(r->gpu_numa) : NULL);
		json_object_object_add(o, "gpu_cpus", str_or_null(r->gpu_cpus));
		json_object_object_add(o, "cpus", str_or_null(r->cpus));
		json_object_object_add(o, "numa", str_or_null(r->numa));
		json_object_array_add(ranks, o);
	}
	json_object_object_add(doc, "ok", json_object_new_boolean(s->ok));
	json_object_object_add(doc, "world_size", json_object_new_int64(s->world));
	json_object_object_add(doc, "master", json_object_new_string(s->master));
	json_object_object_add(doc, "ranks", ranks);
	json_object_object_add(rz, "ok", json_object_new_boolean((long)n == s->world));
	json_object_object_add(rz, "ranks", json_object_new_int64((int64_t)n));
	json_object_object_add(doc, "rendezvous", rz);
	json_object_object_add(ar, "backend", json_object_new_string(s->backend));
	json_object_object_add(ar, "note", str_or_null(s->backend_note));
	json_object_object_add(ar, "run", json_object_new_boolean(s->allreduce_run));
	json_object_object_add(ar, "elements", json_object_new_int64((int64_t)s->elements));
	json_object_object_add(ar, "time_us", json_object_new_double(s->usec));
	json_object_object_add(ar, "wrong", json_object_new_int64(s->wrong));
	json_object_object_add(ar, "ok", json_object_new_boolean(s->allreduce_run && s->wrong == 0));
	json_object_object_add(doc, "allreduce", ar);
	for (size_t i = 0; i < n; i++)
		if (first_of_host(rows, i))
			json_object_array_add(fabric, fabric_json(rows, s->nets, n, i));
	json_object_object_add(doc, "fabric", fabric);
	json_object_object_add(doc, "diagnoses", strings(&s->diagnoses));
	json_object_object_add(doc, "warnings", strings(&s->warnings));
	rv = fprintf(f, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return rv < 0 ? -1 : 0;
}
