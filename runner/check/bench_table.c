/* bench_table.c - `ctrun bench` output in nccl-tests' layout (2.17 and
 * later: the size/count/type/redop/root columns, out-of-place then
 * in-place time, algbw, busbw and #wrong, "# Avg bus bandwidth"), so the
 * scripts that parse nccl-tests output read ours; or the same as JSON. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

void bench_float_str(double v, int width, char *out, size_t size)
{
	for (int prec = 2; prec >= 0; prec--) {
		int n = snprintf(out, size, "%*.*f", width, prec, v);

		if (n >= 0 && n <= width && (size_t)n < size)
			return;
	}
	snprintf(out, size, "%*.*e", width, width >= 7 ? 1 : 0, v);
}

void bench_program(enum coll c, char *out, size_t size)
{
	snprintf(out, size, "%s_perf", coll_name(c));
}

void bench_print_preamble(FILE *f, const struct bench_params *p, const char *backend,
			  const struct bench_device *d, size_t n)
{
	fprintf(f, "# ctrun bench %s: nccl-tests compatible, %zu ranks, %s backend\n",
		CTRUN_VERSION, n, backend);
	fprintf(f, "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %ld "
		"iters: %ld agg iters: 1 validation: %ld graph: 0\n", p->minbytes, p->maxbytes,
		p->stepfactor > 1 ? p->stepfactor : p->stepbytes,
		p->stepfactor > 1 ? "factor" : "bytes", p->warmup, p->iters, p->check);
	fprintf(f, "#\n# Using devices\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "#  Rank %2ld Group %2d Pid %6ld on %10s device %2d [%s] %s\n", d[i].rank, 0,
			d[i].pid, d[i].host, d[i].device, d[i].bus, d[i].name);
}

void bench_print_table_head(FILE *f, enum coll c)
{
	(void)c;
	fprintf(f, "#\n");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
		"in-place          \n", "", "", "", "", "");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size",
		"count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
		"busbw", "#wrong");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
		"(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void bench_print_row(FILE *f, const struct bench_row *r)
{
	char root[16];

	snprintf(root, sizeof(root), "%6ld", r->root);
	fprintf(f, "%12zu  %12zu  %8s  %6s  %6s", r->size, r->count, dtype_name(r->type), r->redop,
		root);
	for (int k = 0; k < 2; k++) {
		char t[16], a[16], b[16];

		bench_float_str(r->time_us[k], 7, t, sizeof(t));
		bench_float_str(r->algbw[k], 6, a, sizeof(a));
		bench_float_str(r->busbw[k], 6, b, sizeof(b));
		if (r->wrong[k] >= 0)
			fprintf(f, "  %7s  %6s  %6s  %6g", t, a, b, (double)r->wrong[k]);
		else
			fprintf(f, "  %7s  %6s  %6s    N/A", t, a, b);
	}
	fputc('\n', f);
}

void bench_print_footer(FILE *f, enum coll c, long long errors, double avg_busbw,
			const char *transport)
{
	char prog[64];

	bench_program(c, prog, sizeof(prog));
	fprintf(f, "# %-20s : %lld %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
	fprintf(f, "# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
	/* A line of its own: parsers read the number after the colon above. */
	if (transport != NULL)
		fprintf(f, "# %-20s : %s\n", "Transport", transport);
	fprintf(f, "#\n# Collective test concluded: %s\n#\n", prog);
}

json_object *bench_json_doc(const struct bench_params *p, const char *backend, long nranks,
			    const struct bench_device *d, size_t n)
{
	json_object *doc = json_object_new_object(), *cfg = json_object_new_object();
	json_object *devs = json_object_new_array();

	json_object_object_add(doc, "version", json_object_new_int(1));
	json_object_object_add(doc, "tool", json_object_new_string("ctrun bench " CTRUN_VERSION));
	json_object_object_add(doc, "backend", json_object_new_string(backend));
	json_object_object_add(doc, "nranks", json_object_new_int64(nranks));
	json_object_object_add(cfg, "minimum_bytes", json_object_new_int64((int64_t)p->minbytes));
	json_object_object_add(cfg, "maximum_bytes", json_object_new_int64((int64_t)p->maxbytes));
	if (p->stepfactor > 1)
		json_object_object_add(cfg, "step_factor", json_object_new_int64((int64_t)p->stepfactor));
	else
		json_object_object_add(cfg, "step_bytes", json_object_new_int64((int64_t)p->stepbytes));
	json_object_object_add(cfg, "warmup_iters", json_object_new_int64(p->warmup));
	json_object_object_add(cfg, "iterations", json_object_new_int64(p->iters));
	json_object_object_add(cfg, "validation", json_object_new_int64(p->check));
	json_object_object_add(cfg, "datatype", json_object_new_string(dtype_name(p->type)));
	json_object_object_add(doc, "config", cfg);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "rank", json_object_new_int64(d[i].rank));
		json_object_object_add(o, "pid", json_object_new_int64(d[i].pid));
		json_object_object_add(o, "hostname", json_object_new_string(d[i].host));
		json_object_object_add(o, "device", json_object_new_int(d[i].device));
		json_object_object_add(o, "device_hex", json_object_new_string(d[i].bus));
		json_object_object_add(o, "device_info", json_object_new_string(d[i].name));
		json_object_array_add(devs, o);
	}
	json_object_object_add(doc, "devices", devs);
	json_object_object_add(doc, "tests", json_object_new_array());
	json_object_object_add(doc, "okay", json_object_new_boolean(1));
	return doc;
}

json_object *bench_json_test(json_object *doc, enum coll c)
{
	json_object *t = json_object_new_object(), *tests = NULL;
	char prog[64];

	bench_program(c, prog, sizeof(prog));
	json_object_object_add(t, "collective", json_object_new_string(coll_name(c)));
	json_object_object_add(t, "program", json_object_new_string(prog));
	json_object_object_add(t, "results", json_object_new_array());
	if (json_object_object_get_ex(doc, "tests", &tests))
		json_object_array_add(tests, t);
	return t;
}

void bench_json_row(json_object *test, const struct bench_row *r)
{
	static const char *const keys[2] = { "out_of_place", "in_place" };
	json_object *o = json_object_new_object(), *results = NULL;

	json_object_object_add(o, "size", json_object_new_int64((int64_t)r->size));
	json_object_object_add(o, "count", json_object_new_int64((int64_t)r->count));
	json_object_object_add(o, "type", json_object_new_string(dtype_name(r->type)));
	json_object_object_add(o, "redop", json_object_new_string(r->redop));
	json_object_object_add(o, "root", json_object_new_int64(r->root));
	for (int k = 0; k < 2; k++) {
		json_object *m = json_object_new_object();

		json_object_object_add(m, "time", json_object_new_double(r->time_us[k]));
		json_object_object_add(m, "alg_bw", json_object_new_double(r->algbw[k]));
		json_object_object_add(m, "bus_bw", json_object_new_double(r->busbw[k]));
		json_object_object_add(m, "nwrong",
				       r->wrong[k] >= 0 ? json_object_new_int64(r->wrong[k]) : NULL);
		json_object_object_add(o, keys[k], m);
	}
	if (json_object_object_get_ex(test, "results", &results))
		json_object_array_add(results, o);
}

void bench_json_summary(json_object *doc, json_object *test, long long errors, double avg_busbw,
			const char *transport)
{
	json_object *oob = json_object_new_object(), *avg = json_object_new_object();

	json_object_object_add(oob, "count", json_object_new_int64(errors));
	json_object_object_add(oob, "okay", json_object_new_boolean(errors == 0));
	json_object_object_add(test, "out_of_bounds", oob);
	json_object_object_add(avg, "bandwidth", json_object_new_double(avg_busbw));
	json_object_object_add(test, "average_bus_bandwidth", avg);
	if (transport != NULL)
		json_object_object_add(test, "transport", json_object_new_string(transport));
	if (errors != 0)
		json_object_object_add(doc, "okay", json_object_new_boolean(0));
}
