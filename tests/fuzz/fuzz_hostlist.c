/* libFuzzer target: hostlist_expand and tasks_per_node_parse on any bytes,
 * and, where libslurm can be loaded, the builtin against libslurm with the
 * rules of tests/unit/test_hostlist.c.  Aborts on:
 *   - a broken contract (error with output left, message not one line,
 *     success beyond the caps);
 *   - a round trip that changes the answer (names joined with ',' expand to
 *     the same names; counts written back as "N(xR),..." parse the same);
 *   - the builtin accepting what libslurm refuses or naming hosts
 *     differently, or refusing what libslurm accepts outside the cases
 *     hostlist.h lists.
 * CTRUN_FUZZ_BUILTIN_ONLY=1 skips libslurm (about 1 ms per input).  Build
 * and run: see tests/fuzz/README. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "slurmlib.h"
#include "tasks.h"
#define CTRTEST_NO_CMOCKA
#define CTRTEST_LENIENT
#include "ctrtest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool use_libslurm, libslurm_suffixes;

static void die(const char *what, const char *in, const char *detail)
{
	fprintf(stderr, "fuzz_hostlist: %s\n  input: \"", what);
	for (const char *p = in; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			fprintf(stderr, "\\x%02x", c);
		else
			fputc(c, stderr);
	}
	fprintf(stderr, "\"\n  %s\n", detail != NULL ? detail : "");
	abort();
}

static char *joined(const struct strv *v)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < v->n; i++)
		len += strlen(v->v[i]) + 1;
	s = p = malloc(len);
	if (s == NULL)
		abort();
	*p = '\0';
	for (size_t i = 0; i < v->n; i++) {
		if (i > 0)
			*p++ = ',';
		strcpy(p, v->v[i]);
		p += strlen(p);
	}
	return s;
}

static void check_error(const char *in, const struct strv *out, const struct err *e)
{
	if (out->n != 0 || out->v != NULL)
		die("error left output behind", in, e->msg);
	if (e->code != EXIT_CTRUN || e->msg[0] == '\0' || strchr(e->msg, '\n') != NULL)
		die("error without a one-line message and code 125", in, e->msg);
}

static void fuzz_hostlist(const char *in)
{
	struct strv b = { 0 };
	struct err eb = { 0 };
	int rb = hostlist_expand(in, &b, &eb);

	if (rb != 0) {
		check_error(in, &b, &eb);
	} else {
		if (b.n > HOSTLIST_MAX_HOSTS || (b.n > 0 && b.v[b.n] != NULL))
			die("bad output vector", in, NULL);
		if (b.n <= 20000) {
			/* Names hold no separator, bracket or control
			 * character, so joined they expand to themselves;
			 * except that "c99999999999999999999[1]" makes a name
			 * whose trailing number is too large on its own. */
			struct strv again = { 0 };
			struct err e2 = { 0 };
			char *j = joined(&b), *j2;

			if (hostlist_expand(j, &again, &e2) != 0) {
				if (strstr(e2.msg, "is too large") == NULL)
					die("own output refused", in, e2.msg);
			} else {
				j2 = joined(&again);
				if (strcmp(j, j2) != 0)
					die("own output expands differently", in, j2);
				free(j2);
			}
			free(j);
			strv_free(&again);
		}
	}

	if (use_libslurm) {
		struct strv l = { 0 };
		struct err el = { 0 };
		int rl = slurmlib_hostlist_expand(in, &l, &el), lerr = errno;

		if (rl != 0)
			check_error(in, &l, &el);
		if (rb == 0 && rl != 0 && lerr == EINVAL && !libslurm_suffixes &&
		    hostlist_has_suffix(in)) {
			/* A suffix: Slurm before 23.11 refuses it. */
		} else if (rb == 0 && rl != 0) {
			/* libslurm is quadratic in the names of several
			 * brackets: a big one may just be slow. */
			if (!(lerr == ETIMEDOUT && b.n > 1000))
				die("builtin accepts, libslurm fails", in, el.msg);
		} else if (rb == 0) {
			char *jb = joined(&b), *jl = joined(&l);

			if (strcmp(jb, jl) != 0)
				die("names differ from libslurm's", in, jl);
			free(jb);
			free(jl);
		} else if (rl == 0) {
			if (!libslurm_lenient(in))
				die("builtin refuses what libslurm takes", in, eb.msg);
		} else if (lerr == ENOMEM ||
			   (lerr == ETIMEDOUT && !libslurm_lenient(in) &&
			    strstr(eb.msg, "more than") == NULL &&
			    strstr(eb.msg, "too large") == NULL)) {
			/* A timeout is a refusal when libslurm has too much
			 * to do: over the caps, or lenient input it would
			 * take after a long time ("n[0-56535]n[00N-009]"). */
			die("libslurm broke where the builtin refused for another reason", in,
			    el.msg);
		}
		strv_free(&l);
	}
	strv_free(&b);
}

static void fuzz_tasks(const char *in)
{
	long *counts = (long *)1;
	size_t n = 99;
	struct err e = { 0 };

	if (tasks_per_node_parse(in, &counts, &n, &e) != 0) {
		if (counts != NULL || n != 0)
			die("tasks: error left output behind", in, e.msg);
		if (e.code != EXIT_CTRUN || e.msg[0] == '\0' || strchr(e.msg, '\n') != NULL)
			die("tasks: error without a one-line message", in, e.msg);
		return;
	}
	if (n == 0 || n > (size_t)TASKS_MAX_NODES)
		die("tasks: bad count of nodes", in, NULL);
	/* Written back run-length encoded, it parses to the same counts. */
	{
		char *s = malloc(n * 24 + 1), *p = s;
		long *again = NULL;
		size_t n2 = 0;
		struct err e2 = { 0 };

		if (s == NULL)
			abort();
		for (size_t i = 0; i < n;) {
			size_t r = 1;

			if (counts[i] < 0 || counts[i] > TASKS_MAX_PER_NODE)
				die("tasks: count out of range", in, NULL);
			while (i + r < n && counts[i + r] == counts[i])
				r++;
			p += sprintf(p, "%s%ld", i ? "," : "", counts[i]);
			if (r > 1)
				p += sprintf(p, "(x%zu)", r);
			i += r;
		}
		if (tasks_per_node_parse(s, &again, &n2, &e2) != 0)
			die("tasks: own output refused", in, e2.msg);
		if (n2 != n || memcmp(again, counts, n * sizeof(*counts)) != 0)
			die("tasks: own output parses differently", in, s);
		free(again);
		free(s);
	}
	free(counts);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *off = getenv("CTRUN_FUZZ_BUILTIN_ONLY");

	(void)argc;
	(void)argv;
	/* Inputs that hang libslurm cost this much each. */
	setenv("CTRUN_LIBSLURM_TIMEOUT_MS", "1000", 0);
	use_libslurm = (off == NULL || strcmp(off, "1") != 0) && slurmlib_available();
	if (use_libslurm) {
		struct strv probe = { 0 };
		struct err e = { 0 };

		libslurm_suffixes = slurmlib_hostlist_expand("n[1-2]-ib", &probe, &e) == 0;
		strv_free(&probe);
	}
	fprintf(stderr, "fuzz_hostlist: comparing with libslurm: %s%s\n",
		use_libslurm ? "yes" : "no", libslurm_suffixes ? " (with suffixes)" : "");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* C strings: the input up to its first NUL. */
	char *in = malloc(size + 1);

	if (in == NULL)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	fuzz_hostlist(in);
	fuzz_tasks(in);
	free(in);
	return 0;
}
