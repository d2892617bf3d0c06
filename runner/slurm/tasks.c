/* tasks.c - parsing Slurm's "2(x3),1" per-node counts (see tasks.h). */
#include "tasks.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"

struct parser {
	const char *s;
	size_t i;
	struct err *e;
};

static int fail(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct parser *p, const char *fmt, ...)
{
	char q[40 * 4 + 8], msg[256];
	size_t len = 0, i;
	va_list ap;

	/* The input, at most 40 bytes, anything unprintable as \xNN. */
	for (i = 0; p->s[i] != '\0' && i < 40 && len + 5 < sizeof(q); i++) {
		unsigned char c = (unsigned char)p->s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			len += (size_t)snprintf(q + len, sizeof(q) - len, "\\x%02x", c);
		else
			q[len++] = (char)c;
	}
	q[len] = '\0';
	if (p->s[i] != '\0' && len + 4 <= sizeof(q))
		memcpy(q + len, "...", 4);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(p->e, EXIT_CTRUN, "per-node counts \"%s\": %s", q, msg);
}

/* Digits at p->i as a value in [min, max]; name says what it is. */
static int number(struct parser *p, long min, long max, const char *name, long *out)
{
	size_t start = p->i;
	long v = 0;
	char buf[32];

	if (p->s[p->i] < '0' || p->s[p->i] > '9')
		return fail(p, "expected %s at offset %zu, found %s", name, start,
			    char_name(p->s[p->i], buf, sizeof(buf)));
	/* Stop accumulating past max: no overflow, still skip all digits. */
	for (; p->s[p->i] >= '0' && p->s[p->i] <= '9'; p->i++)
		if (v <= max)
			v = v * 10 + (p->s[p->i] - '0');
	if (v > max)
		return fail(p, "%s at offset %zu is more than %ld", name, start, max);
	if (v < min)
		return fail(p, "%s at offset %zu is less than %ld", name, start, min);
	*out = v;
	return 0;
}

int tasks_per_node_parse(const char *s, long **counts, size_t *n, struct err *e)
{
	struct parser p = { .s = s, .e = e };
	long *v = NULL;
	size_t len = 0, cap = 0;
	char buf[32];

	*counts = NULL;
	*n = 0;
	if (s == NULL)
		return err_set(e, EXIT_CTRUN, "per-node counts: no input");
	for (;;) {
		long count, repeat = 1;

		if (number(&p, 0, TASKS_MAX_PER_NODE, "a count", &count) < 0)
			goto fail;
		if (s[p.i] == '(') {
			if (s[++p.i] != 'x') {
				fail(&p, "expected 'x' at offset %zu, found %s", p.i,
				     char_name(s[p.i], buf, sizeof(buf)));
				goto fail;
			}
			p.i++;
			if (number(&p, 1, TASKS_MAX_NODES, "a repeat count", &repeat) < 0)
				goto fail;
			if (s[p.i] != ')') {
				fail(&p, "expected ')' at offset %zu, found %s", p.i,
				     char_name(s[p.i], buf, sizeof(buf)));
				goto fail;
			}
			p.i++;
		}
		if ((size_t)repeat > (size_t)TASKS_MAX_NODES - len) {
			fail(&p, "more than %ld nodes", TASKS_MAX_NODES);
			goto fail;
		}
		if (len + (size_t)repeat > cap) {
			size_t ncap = cap ? cap : 16;
			long *nv;

			while (ncap < len + (size_t)repeat)
				ncap *= 2;
			nv = realloc(v, ncap * sizeof(*v));
			if (nv == NULL) {
				fail(&p, "out of memory");
				goto fail;
			}
			v = nv;
			cap = ncap;
		}
		for (long r = 0; r < repeat; r++)
			v[len++] = count;
		if (s[p.i] == '\0')
			break;
		if (s[p.i] != ',') {
			fail(&p, "expected ',' at offset %zu, found %s", p.i,
			     char_name(s[p.i], buf, sizeof(buf)));
			goto fail;
		}
		p.i++;
	}
	*counts = v;
	*n = len;
	return 0;
fail:
	free(v);
	return -1;
}
