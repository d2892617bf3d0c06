/* hosttest.h - helpers shared by the hostlist unit tests: printing inputs
 * and comparing an expansion with the expected names.  Included by one
 * test file each; every function is static and may go unused in one. */
#ifndef CTRUN_HOSTTEST_H
#define CTRUN_HOSTTEST_H

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "hostlist.h"
#include "slurmlib.h"

/* ---- helpers -------------------------------------------------------- */

/* s with unprintable bytes as \xNN, for failure messages. */
static __attribute__((unused)) const char *show(const char *s)
{
	static char buf[4][512];
	static int k;
	char *b = buf[k++ % 4];
	size_t len = 0;

	for (; *s != '\0' && len + 8 < sizeof(buf[0]); s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f)
			len += (size_t)snprintf(b + len, sizeof(buf[0]) - len, "\\x%02x", c);
		else
			b[len++] = (char)c;
	}
	b[len] = '\0';
	return b;
}

/* The names joined with ','. */
static __attribute__((unused)) char *joined(const struct strv *v)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < v->n; i++)
		len += strlen(v->v[i]) + 1;
	s = p = malloc(len);
	assert_non_null(s);
	*p = '\0';
	for (size_t i = 0; i < v->n; i++)
		p += sprintf(p, "%s%s", i ? "," : "", v->v[i]);
	return s;
}

static __attribute__((unused)) void expect_hosts(const char *in, const char *want)
{
	struct strv out = { 0 };
	struct err e = { 0 };
	char *got;

	if (hostlist_expand(in, &out, &e) != 0)
		fail_msg("hostlist_expand(\"%s\") failed: %s", show(in), e.msg);
	got = joined(&out);
	if (strcmp(got, want) != 0)
		fail_msg("hostlist_expand(\"%s\")\n  got:  %s\n  want: %s", show(in), got, want);
	free(got);
	strv_free(&out);
}

static __attribute__((unused)) void expect_refused(const char *in, const char *msg_part)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	if (hostlist_expand(in, &out, &e) != -1) {
		char *got = joined(&out);

		fail_msg("hostlist_expand(\"%s\") accepted it: %s", show(in), got);
	}
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_int_equal(out.n, 0);
	assert_null(out.v);
	assert_null(strchr(e.msg, '\n'));
	if (strstr(e.msg, msg_part) == NULL)
		fail_msg("hostlist_expand(\"%s\"): message \"%s\" lacks \"%s\"", show(in), e.msg,
			 msg_part);
}

struct accept_case {
	const char *in, *want;
};

struct refuse_case {
	const char *in, *msg;
};

#define EXPECT_HOSTS(table)                                          \
	for (size_t i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++) \
		expect_hosts(table[i_].in, table[i_].want)
#define EXPECT_REFUSED(table)                                        \
	for (size_t i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++) \
		expect_refused(table[i_].in, table[i_].msg)

#endif
