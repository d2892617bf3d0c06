/* agentspec.c - the agent's spec: writer, parser, environment layering (see agentspec.h). */
#include "agentspec.h"

#include <errno.h>
#include <limits.h>
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

int agentspec_format(const struct agent_spec *s, char **out, size_t *len, struct err *e)
{
	struct buf b = { 0 };
	char cpus[8192];

	puts_(&b, 'V', "1");
	puts_(&b, 'H', s->host != NULL ? s->host : "?");
	puts_(&b, 'P', s->prefix ? "1" : "0");
	puts_(&b, 'Q', s->quiet ? "1" : "0");
	putl(&b, 'G', s->grace_ms);
	if (s->log_dir != NULL)
		puts_(&b, 'L', s->log_dir);
	if (s->cwd != NULL)
		puts_(&b, 'C', s->cwd);
	if (s->events != NULL)
		puts_(&b, 'E', s->events);
	if (s->control != NULL)
		puts_(&b, 'K', s->control);
	for (size_t i = 0; i < s->inherit.n; i++)
		puts_(&b, 'I', s->inherit.v[i]);
	for (size_t i = 0; i < s->host_over.n; i++)
		puts_(&b, 'T', s->host_over.v[i]);
	for (size_t i = 0; i < s->host_drop.n; i++)
		puts_(&b, 'D', s->host_drop.v[i]);
	for (size_t i = 0; i < s->over.n; i++)
		puts_(&b, 'O', s->over.v[i]);
	for (size_t i = 0; i < s->libdirs.n; i++)
		puts_(&b, 'J', s->libdirs.v[i]);
	for (size_t i = 0; i < s->entry.n; i++)
		puts_(&b, 'Y', s->entry.v[i]);
	if (s->complete_env)
		puts_(&b, 'N', "1");
	if (s->image_scripts)
		puts_(&b, 'M', "1");
	if (s->entry_default)
		puts_(&b, 'F', "1");
	if (s->pmi_fd3)
		puts_(&b, 'B', "1");
	if (s->heartbeat_base != NULL)
		puts_(&b, 'h', s->heartbeat_base);
	if (s->as_user) {
		char ids[64];

		snprintf(ids, sizeof(ids), "%ld %ld", s->uid, s->gid);
		puts_(&b, 'X', ids);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct agent_worker *w = &s->w[i];

		putl(&b, 'W', w->rank);
		putl(&b, 'R', w->local_rank);
		for (size_t k = 0; k < w->argv.n; k++)
			puts_(&b, 'A', w->argv.v[k]);
		for (size_t k = 0; k < w->env.n; k++)
			puts_(&b, 'S', w->env.v[k]);
		if (w->has_cpus) {
			if (cpulist_format(&w->cpus, cpus, sizeof(cpus)) < 0)
				b.failed = 1;
			else
				puts_(&b, 'U', cpus);
		}
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

int agentspec_parse(const char *buf, size_t len, struct agent_spec *s, struct err *e)
{
	struct agent_worker *w = NULL;
	size_t off = 0;
	bool done = false;
	long rec = 0;

	memset(s, 0, sizeof(*s));
	while (off < len && !done) {
		char tag = buf[off++];
		size_t n = 0, digits = 0;
		const char *v;
		char cpus[8192];
		long num;
		int bad = 0;

		while (off < len && buf[off] >= '0' && buf[off] <= '9' && digits < 10) {
			n = n * 10 + (size_t)(buf[off++] - '0');
			digits++;
		}
		/* ':' at off, the value at off+1 .. off+n, '\n' at off+1+n < len. */
		if (digits == 0 || off >= len || buf[off] != ':' || n + 2 > len - off ||
		    buf[off + 1 + n] != '\n')
			goto malformed;
		v = buf + off + 1;
		off += n + 2;
		if (memchr(v, '\0', n) != NULL)
			goto malformed;
		if (rec++ == 0 && (tag != 'V' || n != 1 || v[0] != '1'))
			goto malformed;
		switch (tag) {
		case 'V':
			break;
		case 'H':
			bad = set_str(&s->host, v, n);
			break;
		case 'P':
		case 'Q':
		case 'N':
		case 'M':
		case 'F':
		case 'B':
			if (n != 1 || (v[0] != '0' && v[0] != '1'))
				goto malformed;
			*(tag == 'P'   ? &s->prefix
			  : tag == 'Q' ? &s->quiet
			  : tag == 'N' ? &s->complete_env
			  : tag == 'M' ? &s->image_scripts
			  : tag == 'B' ? &s->pmi_fd3
				       : &s->entry_default) = v[0] == '1';
			break;
		case 'G':
			if (parse_num(v, n, 0, 3600L * 1000, &s->grace_ms) < 0)
				goto malformed;
			break;
		case 'L':
			bad = set_str(&s->log_dir, v, n);
			break;
		case 'C':
			bad = set_str(&s->cwd, v, n);
			break;
		case 'E':
			bad = set_str(&s->events, v, n);
			break;
		case 'K':
			bad = set_str(&s->control, v, n);
			break;
		case 'I':
		case 'O':
		case 'T':
		case 'D':
			if (memchr(v, '=', n) == NULL || v[0] == '=')
				goto malformed;
			bad = strv_pushn(tag == 'I'   ? &s->inherit
					 : tag == 'O' ? &s->over
					 : tag == 'T' ? &s->host_over
						      : &s->host_drop, v, n);
			break;
		case 'h':
			if (n == 0 || v[0] != '/')
				goto malformed;
			bad = set_str(&s->heartbeat_base, v, n);
			break;
		case 'J':
		case 'Y':
			if (n == 0 || v[0] != '/')
				goto malformed;
			bad = strv_pushn(tag == 'J' ? &s->libdirs : &s->entry, v, n);
			break;
		case 'W':
			if (parse_num(v, n, 0, LONG_MAX, &num) < 0)
				goto malformed;
			w = agentspec_add_worker(s, num, 0, NULL);
			bad = w == NULL ? -1 : 0;
			break;
		case 'R':
		case 'A':
		case 'S':
		case 'U':
			if (w == NULL)
				goto malformed;
			if (tag == 'R') {
				if (parse_num(v, n, 0, LONG_MAX, &w->local_rank) < 0)
					goto malformed;
			} else if (tag == 'A') {
				bad = strv_pushn(&w->argv, v, n);
			} else if (tag == 'S') {
				if (memchr(v, '=', n) == NULL)
					goto malformed;
				bad = strv_pushn(&w->env, v, n);
			} else {
				if (n >= sizeof(cpus))
					goto malformed;
				memcpy(cpus, v, n);
				cpus[n] = '\0';
				if (cpulist_parse(cpus, &w->cpus) < 0)
					goto malformed;
				w->has_cpus = true;
			}
			break;
		case 'X': {
			const char *sp = memchr(v, ' ', n);

			if (sp == NULL || parse_num(v, (size_t)(sp - v), 0, 4294967294L, &s->uid) < 0 ||
			    parse_num(sp + 1, n - (size_t)(sp - v) - 1, 0, 4294967294L, &s->gid) < 0)
				goto malformed;
			s->as_user = true;
			break;
		}
		case 'Z':
			done = true;
			break;
		default:
			goto malformed;
		}
		if (bad < 0) {
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
