/* agentspec.c - the agent's spec: writer, parser, environment layering (see agentspec.h). */
#include "agentspec.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "util.h"

struct buf {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct buf *b, char tag, const char *v, size_t n)
{
	char head[32];
	int h;

	if (b->failed)
		return;
	h = snprintf(head, sizeof(head), "%c%zu:", tag, n);
	if (h < 0 || (size_t)h >= sizeof(head)) {
		b->failed = 1;
		return;
	}
	if (b->len + (size_t)h + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + (size_t)h + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, head, (size_t)h);
	b->len += (size_t)h;
	memcpy(b->p + b->len, v, n);
	b->len += n;
	b->p[b->len++] = '\n';
}

static void puts_(struct buf *b, char tag, const char *v)
{
	put(b, tag, v, strlen(v));
}

static void putl(struct buf *b, char tag, long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%ld", v);
	puts_(b, tag, num);
}

/* The records after V and before Z, one row each, in the order they are
 * written: the one table both the writer and the parser follow.  Rows
 * marked worker are fields of struct agent_worker, written after each W
 * (a worker's start), the others of struct agent_spec. */
enum rec_kind {
	REC_STR,  /* a string; written when set, or as `unset` */
	REC_FLAG, /* 0|1; written when true, or always */
	REC_NUM,  /* a number 0..max; always written */
	REC_LIST, /* a strv, one record an element */
	REC_IDS,  /* "UID GID" (X): as_user, uid, gid */
	REC_CPUS, /* a CPU list (U): has_cpus, cpus */
};

/* What a value must be (else the spec is malformed). */
enum rec_check {
	CHECK_NONE,
	CHECK_ABS,   /* an absolute path */
	CHECK_KV,    /* K=V */
	CHECK_KEYED, /* K=V with K not empty */
};

struct rec {
	char tag;
	enum rec_kind kind;
	enum rec_check check;
	bool worker;
	bool always;       /* REC_FLAG: written also when false */
	const char *unset; /* REC_STR: written as this when NULL (else not written) */
	long max;          /* REC_NUM */
	size_t off;        /* the field (REC_IDS: as_user, REC_CPUS: has_cpus) */
};

#define SPEC(f) .off = offsetof(struct agent_spec, f)
#define WORKER(f) .worker = true, .off = offsetof(struct agent_worker, f)

static const struct rec recs[] = {
	{ 'H', REC_STR, .unset = "?", SPEC(host) },
	{ 'P', REC_FLAG, .always = true, SPEC(prefix) },
	{ 'Q', REC_FLAG, .always = true, SPEC(quiet) },
	{ 'G', REC_NUM, .max = 3600L * 1000, SPEC(grace_ms) },
	{ 'L', REC_STR, SPEC(log_dir) },
	{ 'C', REC_STR, SPEC(cwd) },
	{ 'E', REC_STR, SPEC(events) },
	{ 'K', REC_STR, SPEC(control) },
	{ 'I', REC_LIST, CHECK_KEYED, SPEC(inherit) },
	{ 'T', REC_LIST, CHECK_KEYED, SPEC(host_over) },
	{ 'D', REC_LIST, CHECK_KEYED, SPEC(host_drop) },
	{ 'O', REC_LIST, CHECK_KEYED, SPEC(over) },
	{ 'J', REC_LIST, CHECK_ABS, SPEC(libdirs) },
	{ 'Y', REC_LIST, CHECK_ABS, SPEC(entry) },
	{ 'N', REC_FLAG, SPEC(complete_env) },
	{ 'M', REC_FLAG, SPEC(image_scripts) },
	{ 'F', REC_FLAG, SPEC(entry_default) },
	{ 'B', REC_FLAG, SPEC(pmi_fd3) },
	{ 'h', REC_STR, CHECK_ABS, SPEC(heartbeat_base) },
	{ 'X', REC_IDS, SPEC(as_user) },
	{ 'R', REC_NUM, .max = LONG_MAX, WORKER(local_rank) },
	{ 'A', REC_LIST, WORKER(argv) },
	{ 'S', REC_LIST, CHECK_KV, WORKER(env) },
	{ 'U', REC_CPUS, WORKER(has_cpus) },
};

#define FIELD(base, r, type) ((type *)(void *)((char *)(base) + (r)->off))

static void put_rec(struct buf *b, const struct rec *r, const void *base)
{
	char val[8192];

	switch (r->kind) {
	case REC_STR: {
		const char *v = *FIELD(base, r, char *const);

		if (v != NULL || r->unset != NULL)
			puts_(b, r->tag, v != NULL ? v : r->unset);
		break;
	}
	case REC_FLAG:
		if (*FIELD(base, r, const bool) || r->always)
			puts_(b, r->tag, *FIELD(base, r, const bool) ? "1" : "0");
		break;
	case REC_NUM:
		putl(b, r->tag, *FIELD(base, r, const long));
		break;
	case REC_LIST:
		for (size_t k = 0; k < FIELD(base, r, const struct strv)->n; k++)
			puts_(b, r->tag, FIELD(base, r, const struct strv)->v[k]);
		break;
	case REC_IDS: {
		const struct agent_spec *s = base;

		if (s->as_user) {
			snprintf(val, sizeof(val), "%ld %ld", s->uid, s->gid);
			puts_(b, r->tag, val);
		}
		break;
	}
	case REC_CPUS: {
		const struct agent_worker *w = base;

		if (w->has_cpus && cpulist_format(&w->cpus, val, sizeof(val)) < 0)
			b->failed = 1;
		else if (w->has_cpus)
			puts_(b, r->tag, val);
		break;
	}
	}
}

int agentspec_format(const struct agent_spec *s, char **out, size_t *len, struct err *e)
{
	struct buf b = { 0 };

	puts_(&b, 'V', "1");
	for (size_t r = 0; r < sizeof(recs) / sizeof(recs[0]); r++)
		if (!recs[r].worker)
			put_rec(&b, &recs[r], s);
	for (size_t i = 0; i < s->n; i++) {
		putl(&b, 'W', s->w[i].rank);
		for (size_t r = 0; r < sizeof(recs) / sizeof(recs[0]); r++)
			if (recs[r].worker)
				put_rec(&b, &recs[r], &s->w[i]);
	}
	puts_(&b, 'Z', "");
	if (b.failed) {
		free(b.p);
		return err_sys(e, EXIT_CTRUN, "agent spec");
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

struct agent_worker *agentspec_add_worker(struct agent_spec *s, long rank, long local_rank,
					  char *const *argv)
{
	struct agent_worker *w = realloc(s->w, (s->n + 1) * sizeof(*w));

	if (w == NULL)
		return NULL;
	s->w = w;
	w = &s->w[s->n];
	memset(w, 0, sizeof(*w));
	w->rank = rank;
	w->local_rank = local_rank;
	if (argv != NULL && strv_extend(&w->argv, argv) < 0) {
		strv_free(&w->argv);
		return NULL;
	}
	s->n++;
	return w;
}

static int set_str(char **dst, const char *v, size_t n)
{
	free(*dst);
	*dst = strndup(v, n);
	return *dst == NULL ? -1 : 0;
}

static int parse_num(const char *v, size_t n, long min, long max, long *out)
{
	char num[32];

	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, v, n);
	num[n] = '\0';
	return parse_long(num, min, max, out);
}

static bool checked(enum rec_check c, const char *v, size_t n)
{
	switch (c) {
	case CHECK_ABS:
		return n > 0 && v[0] == '/';
	case CHECK_KEYED:
		return memchr(v, '=', n) != NULL && v[0] != '=';
	case CHECK_KV:
		return memchr(v, '=', n) != NULL;
	case CHECK_NONE:
		break;
	}
	return true;
}

#define MALFORMED 1

/* Record r's value (v, n bytes) into its field of base: 0, MALFORMED, or
 * -1 out of memory. */
static int parse_rec(const struct rec *r, void *base, const char *v, size_t n)
{
	char cpus[8192];

	if (!checked(r->check, v, n))
		return MALFORMED;
	switch (r->kind) {
	case REC_STR:
		return set_str(FIELD(base, r, char *), v, n);
	case REC_FLAG:
		if (n != 1 || (v[0] != '0' && v[0] != '1'))
			return MALFORMED;
		*FIELD(base, r, bool) = v[0] == '1';
		return 0;
	case REC_NUM:
		return parse_num(v, n, 0, r->max, FIELD(base, r, long)) < 0 ? MALFORMED : 0;
	case REC_LIST:
		return strv_pushn(FIELD(base, r, struct strv), v, n);
	case REC_IDS: {
		struct agent_spec *s = base;
		const char *sp = memchr(v, ' ', n);

		if (sp == NULL || parse_num(v, (size_t)(sp - v), 0, 4294967294L, &s->uid) < 0 ||
		    parse_num(sp + 1, n - (size_t)(sp - v) - 1, 0, 4294967294L, &s->gid) < 0)
			return MALFORMED;
		s->as_user = true;
		return 0;
	}
	case REC_CPUS: {
		struct agent_worker *w = base;

		if (n >= sizeof(cpus))
			return MALFORMED;
		memcpy(cpus, v, n);
		cpus[n] = '\0';
		if (cpulist_parse(cpus, &w->cpus) < 0)
			return MALFORMED;
		w->has_cpus = true;
		return 0;
	}
	}
	return MALFORMED;
}

static const struct rec *rec_of(char tag)
{
	for (size_t r = 0; r < sizeof(recs) / sizeof(recs[0]); r++)
		if (recs[r].tag == tag)
			return &recs[r];
	return NULL;
}

/* The record at *off: its tag and value; -1 when it is not TAG LENGTH ':'
 * BYTES '\n' with no NUL in BYTES. */
static int next_record(const char *buf, size_t len, size_t *off, char *tag, const char **v,
		       size_t *n)
{
	size_t digits = 0;

	*tag = buf[(*off)++];
	*n = 0;
	while (*off < len && buf[*off] >= '0' && buf[*off] <= '9' && digits < 10) {
		*n = *n * 10 + (size_t)(buf[(*off)++] - '0');
		digits++;
	}
	/* ':' at off, the value at off+1 .. off+n, '\n' at off+1+n < len. */
	if (digits == 0 || *off >= len || buf[*off] != ':' || *n + 2 > len - *off ||
	    buf[*off + 1 + *n] != '\n')
		return -1;
	*v = buf + *off + 1;
	*off += *n + 2;
	return memchr(*v, '\0', *n) != NULL ? -1 : 0;
}

int agentspec_parse(const char *buf, size_t len, struct agent_spec *s, struct err *e)
{
	struct agent_worker *w = NULL;
	size_t off = 0;
	bool done = false;
	long rec = 0;

	memset(s, 0, sizeof(*s));
	while (off < len && !done) {
		const struct rec *r;
		const char *v;
		size_t n;
		char tag;
		long num;
		int got = 0;

		if (next_record(buf, len, &off, &tag, &v, &n) < 0)
			goto malformed;
		if (rec++ == 0 && (tag != 'V' || n != 1 || v[0] != '1'))
			goto malformed;
		if (tag == 'Z') {
			done = true;
		} else if (tag == 'W') {
			if (parse_num(v, n, 0, LONG_MAX, &num) < 0)
				goto malformed;
			w = agentspec_add_worker(s, num, 0, NULL);
			got = w == NULL ? -1 : 0;
		} else if (tag != 'V') {
			r = rec_of(tag);
			if (r == NULL || (r->worker && w == NULL))
				goto malformed;
			got = parse_rec(r, r->worker ? (void *)w : (void *)s, v, n);
		}
		if (got == MALFORMED)
			goto malformed;
		if (got < 0) {
			agentspec_free(s);
			return err_sys(e, EXIT_CTRUN, "agent spec");
		}
	}
	if (!done || off != len)
		goto malformed;
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i].argv.n == 0)
			goto malformed;
	return 0;
malformed:
	agentspec_free(s);
	return err_set(e, EXIT_CTRUN, "agent spec: malformed at byte %zu", off);
}

void agentspec_free(struct agent_spec *s)
{
	free(s->host);
	free(s->log_dir);
	free(s->cwd);
	free(s->events);
	free(s->control);
	free(s->heartbeat_base);
	strv_free(&s->inherit);
	strv_free(&s->over);
	strv_free(&s->host_over);
	strv_free(&s->host_drop);
	strv_free(&s->libdirs);
	strv_free(&s->entry);
	for (size_t i = 0; i < s->n; i++) {
		strv_free(&s->w[i].argv);
		strv_free(&s->w[i].env);
	}
	free(s->w);
	memset(s, 0, sizeof(*s));
}

bool agentspec_inheritable(const char *kv)
{
	static const char *const drop[] = { "PATH=", "LD_LIBRARY_PATH=", "LD_PRELOAD=",
					    "ENROOT_", "APPTAINER", "SINGULARITY", "CTRUN_", NULL };

	if (strchr(kv, '=') == NULL)
		return false;
	/* ctrun's own settings stay out, but not the rendezvous key of the
	 * check/bench workers (runner/node/jobkey.h): they may run in the
	 * container, where no key file is (the spec file is 0600). */
	if (strncmp(kv, "CTRUN_RDZV_KEY=", 15) == 0)
		return true;
	for (size_t i = 0; drop[i] != NULL; i++)
		if (strncmp(kv, drop[i], strlen(drop[i])) == 0)
			return false;
	return true;
}

/* Applies K=V entries over `out`, replacing the same key. */
static int layer(struct strv *out, char *const *v)
{
	for (; v != NULL && *v != NULL; v++) {
		const char *eq = strchr(*v, '=');
		char *key;
		int rc;

		if (eq == NULL || eq == *v)
			continue;
		key = strndup(*v, (size_t)(eq - *v));
		if (key == NULL)
			return -1;
		rc = strv_setenv(out, key, eq + 1, 1);
		free(key);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Whether the colon-separated list holds dir as one of its entries. */
static bool path_list_has(const char *list, const char *dir)
{
	size_t n = strlen(dir);

	for (const char *p = list; p != NULL; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL)
		if (strncmp(p, dir, n) == 0 && (p[n] == ':' || p[n] == '\0'))
			return true;
	return false;
}

int agentspec_drop_host(const struct agent_spec *s, struct strv *own, char *const *image_env)
{
	size_t k = 0;

	if (s->host_drop.n == 0)
		return 0;
	for (size_t i = 0; i < own->n; i++) {
		const char *kv = own->v[i], *eq = strchr(kv, '=');
		bool drop = strv_find(&s->host_drop, kv) >= 0;

		/* The image sets it to the host's value: the image's, kept. */
		if (drop && eq != NULL) {
			for (char *const *p = image_env; p != NULL && *p != NULL; p++)
				if (strncmp(*p, kv, (size_t)(eq - kv) + 1) == 0)
					drop = false;
		}
		if (drop)
			free(own->v[i]);
		else
			own->v[k++] = own->v[i];
	}
	own->n = k;
	if (own->v != NULL)
		own->v[k] = NULL;
	if (strv_getenv(own, "PATH") == NULL &&
	    strv_setenv(own, "PATH", AGENT_DEFAULT_PATH, 1) < 0)
		return -1;
	return 0;
}

int agentspec_worker_env(const struct agent_spec *s, size_t i, char *const *container_env,
			 struct strv *out, struct err *e)
{
	if (i >= s->n)
		return err_set(e, EXIT_CTRUN, "agent spec: no worker %zu", i);
	if (layer(out, s->inherit.v) < 0 || layer(out, container_env) < 0 ||
	    layer(out, s->host_over.v) < 0 || layer(out, s->over.v) < 0)
		return err_sys(e, EXIT_CTRUN, "worker environment");
	for (size_t k = 0; k < s->libdirs.n; k++) {
		const char *dir = s->libdirs.v[k], *cur = strv_getenv(out, "LD_LIBRARY_PATH");
		char *v;
		int rc;

		if (cur != NULL && path_list_has(cur, dir))
			continue;
		if (asprintf(&v, "%s%s%s", cur != NULL && *cur != '\0' ? cur : "",
			     cur != NULL && *cur != '\0' ? ":" : "", dir) < 0)
			return err_sys(e, EXIT_CTRUN, "worker environment");
		rc = strv_setenv(out, "LD_LIBRARY_PATH", v, 1);
		free(v);
		if (rc < 0)
			return err_sys(e, EXIT_CTRUN, "worker environment");
	}
	if (layer(out, s->w[i].env.v) < 0)
		return err_sys(e, EXIT_CTRUN, "worker environment");
	return 0;
}
