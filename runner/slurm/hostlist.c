/* hostlist.c - builtin Slurm hostlist expansion, and the choice between it
 * and libslurm (see hostlist.h for the grammar and where it differs from
 * libslurm on purpose).
 *
 * Three passes: a structure scan of the whole input (brackets pair up, no
 * control characters), then for each host expression a parse that checks
 * every range and counts the hosts, then its expansion.  Counting first
 * keeps "a[0-65535]b[0-65535]" from allocating anything. */
#include "hostlist.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"
#include "slurmlib.h"

/* Slurm's own limits (src/common/hostlist.[ch], unchanged since 2.x). */
#define MAX_RANGE      65536UL  /* hosts in one lo-hi range */
#define MAX_PREFIX_CNT 65536UL  /* names from one bracket before the last */
#define MAX_RANGES     262144UL /* ranges in one bracket (more: libslurm exits) */

struct range {
	unsigned long lo, hi;
	size_t width; /* digits of lo: Slurm pads every number to it */
};

/* One bracket group and the literal text in front of it. */
struct group {
	size_t lit, lit_len; /* offset and length of the literal before '[' */
	size_t first, n;     /* its ranges: ranges[first .. first+n-1] */
	unsigned long count; /* hosts in the group */
};

struct parser {
	const char *s;
	struct err *e;
	struct range *r;
	size_t nr, rcap;
	struct group *g;
	size_t ng, gcap;
	size_t suffix, suffix_len; /* text after the last ']' of the expression */
	unsigned long hosts; /* expanded so far, all expressions */
	size_t bytes;        /* name bytes so far, one terminator per name */
	char *name;
	size_t name_cap;
	struct strv out;
};

/* The input as it appears in messages: quoted by the caller, at most 60
 * bytes, bytes outside printable ASCII as \xNN. */
static void quote(char *buf, size_t size, const char *s)
{
	size_t len = 0, i;

	for (i = 0; s[i] != '\0' && i < 60; i++) {
		unsigned char c = (unsigned char)s[i];
		int ret;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			ret = snprintf(buf + len, size - len, "\\x%02x", c);
		else
			ret = snprintf(buf + len, size - len, "%c", c);
		if (ret < 0 || (size_t)ret >= size - len)
			break;
		len += (size_t)ret;
	}
	if (s[i] != '\0' && len + 4 <= size)
		memcpy(buf + len, "...", 4);
	else
		buf[len < size ? len : size - 1] = '\0';
}

static int fail(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct parser *p, const char *fmt, ...)
{
	char q[256], msg[512];
	va_list ap;

	quote(q, sizeof(q), p->s);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(p->e, EXIT_CTRUN, "hostlist \"%s\": %s", q, msg);
}

static int oom(struct parser *p)
{
	return fail(p, "out of memory");
}

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_control(char c)
{
	unsigned char u = (unsigned char)c;

	return (u < 0x20 && c != '\t') || u == 0x7f;
}

/* Brackets must pair up without nesting and control characters are
 * refused: libslurm does not refuse these but invents names from them
 * ("n[1-" is the host "n]", "a[1[2]" is "a[12", "a\nb" one host). */
static int scan_structure(struct parser *p)
{
	size_t open = 0;
	bool inside = false;

	for (size_t i = 0; p->s[i] != '\0'; i++) {
		char c = p->s[i];

		if (is_control(c))
			return fail(p, "control character 0x%02x at offset %zu",
				    (unsigned char)c, i);
		if (c == '[') {
			if (inside)
				return fail(p, "nested '[' at offset %zu", i);
			inside = true;
			open = i;
		} else if (c == ']') {
			if (!inside)
				return fail(p, "unexpected ']' at offset %zu", i);
			inside = false;
		}
	}
	if (inside)
		return fail(p, "'[' at offset %zu has no matching ']'", open);
	return 0;
}

/* Decimal digits at s[*i]; refuses values libslurm cannot represent
 * (strtoul saturates at ULONG_MAX, and a range ending there breaks its
 * hostlist_shift). */
static int parse_number(struct parser *p, size_t *i, unsigned long *v, size_t *width)
{
	size_t start = *i;
	unsigned long x = 0;
	bool big = false;

	for (; is_digit(p->s[*i]); (*i)++) {
		unsigned d = (unsigned)(p->s[*i] - '0');

		if (x > (ULONG_MAX - d) / 10)
			big = true;
		else
			x = x * 10 + d;
	}
	if (big || x == ULONG_MAX)
		return fail(p, "number at offset %zu is too large", start);
	*v = x;
	*width = *i - start;
	return 0;
}

static int push_range(struct parser *p, const struct range *r)
{
	if (p->nr == p->rcap) {
		size_t cap = p->rcap ? p->rcap * 2 : 16;
		struct range *n = realloc(p->r, cap * sizeof(*n));

		if (n == NULL)
			return oom(p);
		p->r = n;
		p->rcap = cap;
	}
	p->r[p->nr++] = *r;
	return 0;
}

static struct group *new_group(struct parser *p)
{
	if (p->ng == p->gcap) {
		size_t cap = p->gcap ? p->gcap * 2 : 4;
		struct group *n = realloc(p->g, cap * sizeof(*n));

		if (n == NULL) {
			oom(p);
			return NULL;
		}
		p->g = n;
		p->gcap = cap;
	}
	memset(&p->g[p->ng], 0, sizeof(p->g[p->ng]));
	return &p->g[p->ng++];
}

/* The ranges of the group whose '[' is at s[*i]; leaves *i after its ']'.
 * Only digits, '-' and ',' belong in a group (libslurm also takes " 1",
 * "+1", "1a-3" and "1-", giving odd widths or a silent default). */
static int parse_group(struct parser *p, size_t *i, struct group *g)
{
	size_t open = (*i)++;
	char what[32];

	g->first = p->nr;
	for (;;) {
		struct range r;
		size_t start = *i, hw;
		char c = p->s[*i];

		if (c == ',' || c == ']')
			return fail(p, "empty range at offset %zu", start);
		if (!is_digit(c))
			return fail(p, "%s in range at offset %zu",
				    char_name(c, what, sizeof(what)), start);
		if (parse_number(p, i, &r.lo, &r.width) < 0)
			return -1;
		r.hi = r.lo;
		if (p->s[*i] == '-') {
			(*i)++;
			c = p->s[*i];
			if (c == ',' || c == ']')
				return fail(p, "range at offset %zu has no upper bound",
					    start);
			if (!is_digit(c))
				return fail(p, "%s in range at offset %zu",
					    char_name(c, what, sizeof(what)), *i);
			if (parse_number(p, i, &r.hi, &hw) < 0)
				return -1;
		}
		c = p->s[*i];
		if (c != ',' && c != ']')
			return fail(p, "%s in range at offset %zu",
				    char_name(c, what, sizeof(what)), *i);
		if (r.lo > r.hi)
			return fail(p, "descending range %lu-%lu at offset %zu",
				    r.lo, r.hi, start);
		if (r.hi - r.lo >= MAX_RANGE)
			return fail(p, "range %lu-%lu at offset %zu has more than "
				    "%lu hosts (Slurm's MAX_RANGE)", r.lo, r.hi, start,
				    MAX_RANGE);
		if (g->n == MAX_RANGES)
			return fail(p, "bracket at offset %zu has more than %lu ranges",
				    open, MAX_RANGES);
		if (push_range(p, &r) < 0)
			return -1;
		g->n++;
		/* At most 262144 ranges of 65536: no overflow in 64 bits,
		 * saturate where unsigned long is 32. */
		g->count = g->count > ULONG_MAX - (r.hi - r.lo + 1) ?
			ULONG_MAX : g->count + (r.hi - r.lo + 1);
		(*i)++;
		if (c == ']')
			return 0;
	}
}

/* Appends v to p->name at *len, zero-padded to width as "%0*lu" would. */
static void put_number(struct parser *p, size_t *len, unsigned long v, size_t width)
{
	char digits[24];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (; width > n; width--)
		p->name[(*len)++] = '0';
	while (n > 0)
		p->name[(*len)++] = digits[--n];
}

static int push_name(struct parser *p, size_t len)
{
	if (len + 1 > HOSTLIST_MAX_BYTES - p->bytes)
		return fail(p, "expands to more than %lu MiB of host names",
			    HOSTLIST_MAX_BYTES >> 20);
	p->bytes += len + 1;
	if (strv_pushn(&p->out, p->name, len) < 0)
		return oom(p);
	return 0;
}

/* Writes every name of the expression whose groups are p->g[0..ng-1].
 * Slurm's order (src/common/hostlist.c _push_range_list): the last group
 * varies fastest; the groups before it are peeled off the prefix from the
 * right, each one recursing over the ones to its left, so the first group
 * comes next and the second-to-last group varies slowest. */
static int expand_groups(struct parser *p)
{
	size_t k = p->ng, need = 1;
	size_t *ri = NULL, *order = NULL;
	unsigned long *v = NULL;
	int rv = -1;

	for (size_t g = 0; g < k; g++) {
		size_t w = 20; /* digits of ULONG_MAX */

		for (size_t j = 0; j < p->g[g].n; j++)
			if (p->r[p->g[g].first + j].width > w)
				w = p->r[p->g[g].first + j].width;
		need += p->g[g].lit_len + w;
	}
	need += p->suffix_len;
	if (need > p->name_cap) {
		char *n = realloc(p->name, need);

		if (n == NULL)
			return oom(p);
		p->name = n;
		p->name_cap = need;
	}
	ri = calloc(k, sizeof(*ri));
	order = calloc(k, sizeof(*order));
	v = calloc(k, sizeof(*v));
	if (ri == NULL || order == NULL || v == NULL) {
		oom(p);
		goto out;
	}
	/* order[0] varies fastest. */
	order[0] = k - 1;
	for (size_t j = 1; j < k; j++)
		order[j] = j - 1;
	for (size_t g = 0; g < k; g++)
		v[g] = p->r[p->g[g].first].lo;

	for (;;) {
		size_t len = 0, j;

		for (size_t g = 0; g < k; g++) {
			const struct group *gr = &p->g[g];

			memcpy(p->name + len, p->s + gr->lit, gr->lit_len);
			len += gr->lit_len;
			put_number(p, &len, v[g], p->r[gr->first + ri[g]].width);
		}
		memcpy(p->name + len, p->s + p->suffix, p->suffix_len);
		len += p->suffix_len;
		if (push_name(p, len) < 0)
			goto out;

		for (j = 0; j < k; j++) {
			size_t g = order[j];
			const struct range *r = &p->r[p->g[g].first + ri[g]];

			if (v[g] < r->hi) {
				v[g]++;
				break;
			}
			ri[g] = ri[g] + 1 < p->g[g].n ? ri[g] + 1 : 0;
			v[g] = p->r[p->g[g].first + ri[g]].lo;
			if (ri[g] != 0)
				break;
		}
		if (j == k)
			break;
	}
	rv = 0;
out:
	free(ri);
	free(order);
	free(v);
	return rv;
}

/* A name without brackets is taken as it is.  libslurm splits off its
 * trailing digits as a number and prints it back, which is the same text
 * unless the number does not fit. */
static int expand_plain(struct parser *p, size_t start, size_t end)
{
	size_t i = end, width;
	unsigned long v;

	while (i > start && is_digit(p->s[i - 1]))
		i--;
	if (i < end && parse_number(p, &i, &v, &width) < 0)
		return -1;
	if (end - start + 1 > p->name_cap) {
		char *n = realloc(p->name, end - start + 1);

		if (n == NULL)
			return oom(p);
		p->name = n;
		p->name_cap = end - start + 1;
	}
	memcpy(p->name, p->s + start, end - start);
	return push_name(p, end - start);
}

/* One host expression starting at s[*i] (not a separator); leaves *i at
 * the separator or NUL after it. */
static int parse_expression(struct parser *p, size_t *i)
{
	size_t start = *i, lit = *i;
	unsigned long hosts = 1;

	p->ng = 0;
	p->nr = 0;
	for (;;) {
		char c = p->s[*i];

		if (c == '\0' || is_sep(c))
			break;
		if (c == '[') {
			struct group *g = new_group(p);

			if (g == NULL)
				return -1;
			g->lit = lit;
			g->lit_len = *i - lit;
			if (parse_group(p, i, g) < 0)
				return -1;
			lit = *i;
			continue;
		}
		(*i)++;
	}
	if (p->ng == 0) {
		if (p->hosts + 1 > HOSTLIST_MAX_HOSTS)
			return fail(p, "expands to more than %lu hosts",
				    HOSTLIST_MAX_HOSTS);
		p->hosts++;
		return expand_plain(p, start, *i);
	}
	/* Slurm 23.11 and later: text after the last bracket ends every name
	 * (n[1-2]-ib is n1-ib,n2-ib; src/common/hostlist.c hostlist_push_hr). */
	p->suffix = lit;
	p->suffix_len = *i - lit;
	for (size_t g = 0; g + 1 < p->ng; g++)
		if (p->g[g].count > MAX_PREFIX_CNT)
			return fail(p, "bracket at offset %zu expands to more than "
				    "%lu names (Slurm's MAX_PREFIX_CNT)",
				    p->g[g].lit + p->g[g].lit_len, MAX_PREFIX_CNT);
	for (size_t g = 0; g < p->ng; g++) {
		if (p->g[g].count > HOSTLIST_MAX_HOSTS / hosts) {
			hosts = ULONG_MAX;
			break;
		}
		hosts *= p->g[g].count;
	}
	if (hosts > HOSTLIST_MAX_HOSTS - p->hosts)
		return fail(p, "expands to more than %lu hosts", HOSTLIST_MAX_HOSTS);
	p->hosts += hosts;
	return expand_groups(p);
}

/* Moves src's names to the end of dst (src ends empty).  All or nothing:
 * on failure dst is as it was. */
static int move_names(struct strv *dst, struct strv *src)
{
	size_t n0 = dst->n, j;

	if (dst->n == 0) {
		strv_free(dst);
		*dst = *src;
		*src = (struct strv){ 0 };
		return 0;
	}
	for (j = 0; j < src->n; j++) {
		if (strv_push(dst, src->v[j]) < 0)
			break;
	}
	if (j < src->n) {
		for (size_t k = n0; k < dst->n; k++)
			free(dst->v[k]);
		dst->n = n0;
		dst->v[n0] = NULL;
		return -1;
	}
	strv_free(src);
	return 0;
}

int hostlist_expand(const char *s, struct strv *out, struct err *e)
{
	struct parser p = { .s = s, .e = e };
	size_t i = 0;
	int rv = -1;

	if (s == NULL)
		return err_set(e, EXIT_CTRUN, "hostlist: no input");
	if (scan_structure(&p) < 0)
		goto out;
	for (;;) {
		while (is_sep(s[i]))
			i++;
		if (s[i] == '\0')
			break;
		if (parse_expression(&p, &i) < 0)
			goto out;
	}
	if (move_names(out, &p.out) < 0) {
		oom(&p);
		goto out;
	}
	rv = 0;
out:
	strv_free(&p.out);
	free(p.r);
	free(p.g);
	free(p.name);
	return rv;
}

static bool libslurm_disabled(void)
{
	const char *v = getenv("CTRUN_NO_LIBSLURM");

	return v != NULL && strcmp(v, "1") == 0;
}

void hostlist_describe(char *buf, size_t size)
{
	char lib[PATH_MAX + 256];

	if (libslurm_disabled()) {
		snprintf(buf, size, "the builtin parser (CTRUN_NO_LIBSLURM=1)");
		return;
	}
	slurmlib_describe(lib, sizeof(lib));
	if (slurmlib_available())
		snprintf(buf, size, "libslurm %s", lib);
	else
		snprintf(buf, size, "the builtin parser: %s", lib);
}

int hostlist_expand_any(const char *s, struct strv *out, struct err *e)
{
	struct strv mine = { 0 }, theirs = { 0 };
	struct err e2 = { 0 };
	struct strv *answer = NULL;
	int rv = -1;

	/* No check of the library first: the expansion's own child loads it
	 * (one child, not two: ~8 ms less per ctrun start under Slurm), and
	 * says when there is none (ENOENT: the builtin's answer below). */
	if (libslurm_disabled() || slurmlib_absent())
		return hostlist_expand(s, out, e);

	/* The builtin decides what is accepted, so a malformed list fails the
	 * same way with or without libslurm (libslurm would turn "n[1-" into
	 * "n]" and "n[1, 3]" into n1,n03); libslurm then gives the names,
	 * which on 22.05 are the same, and elsewhere are its release's. */
	if (hostlist_expand(s, &mine, e) < 0)
		return -1;
	if (slurmlib_hostlist_expand(s, &theirs, &e2) == 0)
		answer = &theirs;
	else if (errno != EINVAL)
		answer = &mine; /* the helper crashed, hung or had no memory */
	else if (e != NULL)
		*e = e2;        /* this Slurm refuses it: so does ctrun */
	if (answer != NULL) {
		if (move_names(out, answer) < 0)
			err_set(e, EXIT_CTRUN, "hostlist: out of memory");
		else
			rv = 0;
	}
	strv_free(&mine);
	strv_free(&theirs);
	return rv;
}
