/* Unit tests: hostlist expansion against libslurm.
 *
 * The differential test runs hand-picked edge cases and a few thousand
 * generated ones (CTRUN_TEST_SEED picks another seed) through both the
 * builtin and every libslurm on the machine (Debian's, any Slurm under
 * /opt or /usr/local, $CTRUN_TEST_LIBSLURMS): when the builtin accepts,
 * libslurm must give the same names; when libslurm refuses, the builtin
 * must too, but for text after the last bracket, which releases before
 * 23.11 refuse; the builtin may refuse what libslurm takes only in the
 * cases hostlist.h lists.  It is skipped, not passed, where no libslurm
 * can be loaded. */
#include <glob.h>

#define CTRTEST_HOSTLIST
#define CTRTEST_LENIENT
#include "ctrtest.h"

/* ---- the libslurm path ---------------------------------------------- */

struct diff_stats {
	unsigned both_ok, both_refused, builtin_stricter, libslurm_hung, libslurm_slow;
	unsigned builtin_newer;  /* a suffix this (pre-23.11) libslurm refuses */
	bool suffixes;           /* this libslurm takes text after the last bracket */
};

static void compare_with_libslurm(const char *in, struct diff_stats *st)
{
	struct strv b = { 0 }, l = { 0 };
	struct err eb = { 0 }, el = { 0 };
	int rb, rl, lerr;

	rb = hostlist_expand(in, &b, &eb);
	rl = slurmlib_hostlist_expand(in, &l, &el);
	lerr = errno;
	if (rb == 0 && rl != 0 && lerr == EINVAL && !st->suffixes && hostlist_has_suffix(in)) {
		st->builtin_newer++;
	} else if (rb == 0 && rl != 0) {
		/* libslurm is quadratic in the names of several brackets
		 * (a[0-65535]b[1] takes 0.4 s, more on a loaded machine). */
		if (lerr != ETIMEDOUT || b.n <= 1000)
			fail_msg("\"%s\": builtin gave %zu hosts, libslurm failed: %s", show(in),
				 b.n, el.msg);
		st->libslurm_slow++;
	} else if (rb == 0) {
		char *gb = joined(&b), *gl = joined(&l);

		if (strcmp(gb, gl) != 0)
			fail_msg("\"%s\": names differ\n  builtin:  %.300s\n  libslurm: %.300s",
				 show(in), gb, gl);
		free(gb);
		free(gl);
		st->both_ok++;
	} else if (rl != 0) {
		/* libslurm never finishes on three big brackets, nor on a
		 * number >= 2^64 in a bracket before the last (its loop up to
		 * ULONG_MAX wraps), and is slow on lenient input with many
		 * names; the builtin refuses those at once. */
		if (lerr == ENOMEM ||
		    (lerr == ETIMEDOUT && !libslurm_lenient(in) &&
		     strstr(eb.msg, "more than") == NULL && strstr(eb.msg, "too large") == NULL))
			fail_msg("\"%s\": libslurm broke: %s", show(in), el.msg);
		if (lerr == ETIMEDOUT)
			st->libslurm_hung++;
		st->both_refused++;
	} else {
		char *gl = joined(&l);

		if (!libslurm_lenient(in))
			fail_msg("\"%s\": builtin refused (%s) what libslurm takes: %.300s",
				 show(in), eb.msg, gl);
		free(gl);
		st->builtin_stricter++;
	}
	assert_true(rb == 0 || b.n == 0);
	strv_free(&b);
	strv_free(&l);
}

static const char *const edge_cases[] = {
	"", " ", ",", ",,a,,", "a", "a b", "a\tb", "a,b c\td", "n1", "n01", "n001,n1", "n1,n02",
	"n9,n10", "n09,n10", "n99,n100", "n[1-3]", "n[01-03]", "n[1-010]", "n[010-1]", "n[01-1]",
	"n[007-9]", "n[9-0011]", "n[0]", "n[00]", "n[0-0]", "n[1,1]", "n[1-3],n[2-4]", "n[3],n[1-3]",
	"n[1,3,5-7]", "n[5,1-2]", "n[1,02,003]", "rack[1-2]n[01-04]", "r[1,3]-n[1-2]",
	"a[1-2]b[1-2]c[1-2]", "a[1-2]b[1-2]c[1-2]d[1-2]", "a[1]b[2]c[3]d[4]e[5]", "[1-2]",
	"[1-2][3-4]", "[09-10]", "1[2-3]", "n1[2-3]", "n[1-2],n3", "n[1-2]n3", "n[1-2]-ib",
	"a[1]b", "n[]", "[]", "n[,]", "n[,1]", "n[1,]", "n[1,,2]", "n[-]", "n[-1]", "n[1-]",
	"n[1--2]", "n[1-2-3]", "n[3-1]", "n[10-09]", "n[a-b]", "n[x]", "n[1x2]", "n[001x002]",
	"n[ 1]", "n[1 ]", "n[1, 3]", "n[+1]", "n[1-+3]", "n[1a-3]", "n[1 -3]", "n[1- 3]",
	"n[1-", "n[1-2,3", "[", "[abc", "]", "a]b", "n1-]", "n[1-2]]", "n[[1-2]]", "a[1[2]",
	"a[1]]b[2]", "a[x]b[1-2]c[1-3]", "a[1,x]b[1]c[1-2]", "a[3-1]b[1]c[1]", "a[1-2]b[3-1]c[1]",
	"a[1-2]b[x]c[1]", "a[1]b[1]c[x]", "n[0-65535]", "n[0-65536]", "n[1-65536]", "n[1-65537]",
	"n[00001-65536]", "a[0-40000,0-40000]b[1]", "a[0-65535]b[1]", "a[0-65536]b[1]",
	"a[1]b[0-40000,0-40000]", "a[0-1023]b[0-1023]", "a[0-1023]b[0-1024]",
	"a[0-65535]b[0-65535]", "n[18446744073709551614]", "n[18446744073709551615]",
	"n[99999999999999999999]", "n18446744073709551614", "n18446744073709551615",
	"n99999999999999999999", "a99999999999999999999b", "n[000000000000000000000000001]",
	"n[1-00000000000000000000000005]", "a\nb", "n[1-2]\r", "x\"y\\z", "n\x80\xff",
	"n[1]\x01", "\t\t", "n[1-2]\tm[3-4]", "n[1-2] , m[3-4]",
};

static unsigned long rnd_state;

static unsigned rnd(unsigned n)
{
	/* xorshift64*: reproducible across libcs, unlike rand(). */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return (unsigned)((rnd_state * 2685821657736338717UL) >> 33) % n;
}

/* A number for a range; large ones only where a name has one bracket,
 * since libslurm takes quadratic time in the names of several brackets. */
static size_t put_num(char *s, size_t len, size_t cap, unsigned groups)
{
	static const char *const big[] = { "65535", "65536", "18446744073709551614",
					   "18446744073709551615", "99999999999999999999" };
	unsigned w = groups > 1 ? 0 : rnd(10);
	int ret;

	if (w == 9 && rnd(6) == 0)
		ret = snprintf(s + len, cap - len, "%s", big[rnd(5)]);
	else if (w < 7)
		ret = snprintf(s + len, cap - len, "%u", rnd(w < 5 ? 12 : 130));
	else
		ret = snprintf(s + len, cap - len, "%0*u", (int)rnd(5) + 1, rnd(1100));
	return ret > 0 && (size_t)ret < cap - len ? len + (size_t)ret : len;
}

/* "N" or an ascending "N-M", zero-padded now and then. */
static size_t put_range(char *s, size_t len, size_t cap, unsigned groups)
{
	unsigned lo = rnd(groups > 1 ? 12 : 1100), hi = lo + rnd(groups > 1 ? 4 : 40);
	int wl = rnd(3) == 0 ? (int)rnd(5) + 1 : 0, wh = rnd(4) == 0 ? (int)rnd(5) + 1 : 0;
	int ret;

	if (rnd(3) == 0)
		ret = snprintf(s + len, cap - len, "%0*u", wl, lo);
	else
		ret = snprintf(s + len, cap - len, "%0*u-%0*u", wl, lo, wh, hi);
	return ret > 0 && (size_t)ret < cap - len ? len + (size_t)ret : len;
}

/* A hostlist-like string: names with 0-3 bracket groups of small ranges,
 * then sometimes a few random edits with the characters that matter. */
static void random_hostlist(char *s, size_t cap)
{
	static const char lit[] = "abnrx-._0123456789";
	static const char edits[] = "[]-, \tx+0123456789a\n";
	static const char *const seps[] = { ",", " ", "\t", ", ", ",," };
	size_t len = 0;
	unsigned exprs = rnd(4) + 1;

	for (unsigned x = 0; x < exprs && len + 64 < cap; x++) {
		unsigned groups = rnd(10) < 7 ? rnd(3) + (rnd(4) == 0) : 0;

		if (x > 0)
			len += (size_t)snprintf(s + len, cap - len, "%s", seps[rnd(5)]);
		for (unsigned k = rnd(4) + (groups == 0); k > 0; k--)
			s[len++] = lit[rnd(sizeof(lit) - 1)];
		for (unsigned g = 0; g < groups && len + 64 < cap; g++) {
			unsigned elems = rnd(3) + 1;

			s[len++] = '[';
			for (unsigned el = 0; el < elems && len + 48 < cap; el++) {
				if (el > 0)
					s[len++] = ',';
				if (rnd(4) == 0) {
					/* Anything, often descending or huge. */
					len = put_num(s, len, cap, groups);
					s[len++] = '-';
					len = put_num(s, len, cap, groups);
				} else {
					len = put_range(s, len, cap, groups);
				}
			}
			s[len++] = ']';
			if (g + 1 < groups)
				for (unsigned k = rnd(3); k > 0; k--)
					s[len++] = lit[rnd(sizeof(lit) - 1)];
		}
		if (rnd(20) == 0)
			s[len++] = lit[rnd(sizeof(lit) - 1)];
	}
	s[len] = '\0';
	for (unsigned m = rnd(10) < 4 ? rnd(3) + 1 : 0; m > 0; m--) {
		size_t at = len ? rnd((unsigned)len + 1) : 0;

		if (rnd(2) == 0 && len + 2 < cap) {
			memmove(s + at + 1, s + at, len - at + 1);
			s[at] = edits[rnd(sizeof(edits) - 1)];
			len++;
		} else if (len > 0 && at < len) {
			memmove(s + at, s + at + 1, len - at);
			len--;
		}
	}
}

/* Every libslurm on this machine, each once (by real path). */
static size_t find_libslurms(char paths[][PATH_MAX], size_t max)
{
	static const char *const patterns[] = {
		"/usr/lib/*-linux-*/libslurm.so.[0-9]*", "/usr/lib64/libslurm.so.[0-9]*",
		"/usr/local/lib*/libslurm.so.[0-9]*", "/opt/*/lib*/libslurm.so.[0-9]*",
	};
	const char *extra = getenv("CTRUN_TEST_LIBSLURMS"); /* colon-separated paths */
	size_t n = 0;
	char real[PATH_MAX];
	glob_t g;

	for (size_t i = 0; i < sizeof(patterns) / sizeof(*patterns); i++) {
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++) {
			bool seen = false;

			if (realpath(g.gl_pathv[k], real) == NULL)
				continue;
			for (size_t j = 0; j < n; j++)
				seen = seen || strcmp(paths[j], real) == 0;
			if (!seen && n < max)
				snprintf(paths[n++], PATH_MAX, "%s", real);
		}
		globfree(&g);
	}
	for (const char *p = extra; p != NULL && *p != '\0' && n < max;) {
		size_t len = strcspn(p, ":");

		snprintf(paths[n++], PATH_MAX, "%.*s", (int)len, p);
		p += len + (p[len] == ':');
	}
	return n;
}

static void differential(const char *lib)
{
	struct diff_stats st = { 0 };
	const char *seed_env = getenv("CTRUN_TEST_SEED");
	unsigned long seed = seed_env != NULL ? strtoul(seed_env, NULL, 10) : 20240611UL;
	unsigned generated = 3000;
	struct strv probe = { 0 };
	struct err e = { 0 };
	char s[512];

	setenv("CTRUN_LIBSLURM", lib, 1);
	if (!slurmlib_available())
		fail_msg("differential: %s was found but does not load", lib);
	st.suffixes = slurmlib_hostlist_expand("n[1-2]-ib", &probe, &e) == 0;
	strv_free(&probe);
	for (size_t i = 0; i < sizeof(edge_cases) / sizeof(edge_cases[0]); i++)
		compare_with_libslurm(edge_cases[i], &st);
	rnd_state = seed * 2654435761UL + 1;
	for (unsigned i = 0; i < generated; i++) {
		random_hostlist(s, sizeof(s));
		compare_with_libslurm(s, &st);
	}
	print_message("differential against %s (%s suffixes): %zu edge cases + %u generated "
		      "(seed %lu): %u same names, %u both refused (libslurm hung on %u), %u refused "
		      "by the builtin only, %u suffixes only the builtin takes, %u too slow in "
		      "libslurm\n", lib, st.suffixes ? "with" : "without",
		      sizeof(edge_cases) / sizeof(edge_cases[0]), generated, seed, st.both_ok,
		      st.both_refused, st.libslurm_hung, st.builtin_stricter, st.builtin_newer,
		      st.libslurm_slow);
	/* The generator must exercise all three outcomes. */
	assert_true(st.both_ok > 500 && st.both_refused > 100 && st.builtin_stricter > 100);
	/* A release without suffixes must have been shown some. */
	assert_true(st.suffixes || st.builtin_newer > 10);
}

static void test_differential_against_every_libslurm(void **state)
{
	char libs[8][PATH_MAX];
	size_t n = find_libslurms(libs, 8);
	const char *old = getenv("CTRUN_LIBSLURM");
	char *saved = old != NULL ? strdup(old) : NULL;

	(void)state;
	if (n == 0) {
		print_message("differential: no libslurm on this machine, skipped\n");
		skip();
	}
	setenv("CTRUN_LIBSLURM_TIMEOUT_MS", "10000", 0);
	for (size_t i = 0; i < n; i++)
		differential(libs[i]);
	if (saved != NULL)
		setenv("CTRUN_LIBSLURM", saved, 1);
	else
		unsetenv("CTRUN_LIBSLURM");
	free(saved);
}

static void test_libslurm_expands_65536_hosts(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	if (!slurmlib_available())
		skip();
	assert_int_equal(slurmlib_hostlist_expand("n[00001-65536]", &out, &e), 0);
	assert_int_equal(out.n, 65536);
	assert_string_equal(out.v[0], "n00001");
	assert_string_equal(out.v[65535], "n65536");
	strv_free(&out);
}

/* Debian's libslurm 22.05 (make deps installs it) breaks on this list: the
 * helper child dies, ctrun gets an error saying so. */
#define DEBIAN_LIBSLURM "/usr/lib/x86_64-linux-gnu/libslurm.so.38"

static void set_libslurm_env(const char *v);
static void restore_libslurm_env(void);

static void test_libslurm_crash_is_an_error_not_ours(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };
	int ret;

	(void)state;
	set_libslurm_env(DEBIAN_LIBSLURM);
	assert_true(slurmlib_available());
	ret = slurmlib_hostlist_expand("n18446744073709551614,n18446744073709551615", &out, &e);
	assert_int_equal(ret, -1);
	assert_int_equal(errno, EIO);
	/* It segfaults, or (under the helper's address-space cap, after a
	 * larger parent) fails an allocation and exit()s: either way ours. */
	if (strstr(e.msg, "libslurm.so.38.0.0 crashed (signal 11)") == NULL &&
	    strstr(e.msg, "libslurm.so.38.0.0 exited with status") == NULL)
		fail_msg("not the helper's death: %s", e.msg);
	assert_int_equal(out.n, 0);
	strv_free(&out);
	restore_libslurm_env();
}

/* Sets CTRUN_LIBSLURM; restore_libslurm_env puts back what it was. */
static char *saved_libslurm_env;

static void set_libslurm_env(const char *v)
{
	const char *old = getenv("CTRUN_LIBSLURM");

	free(saved_libslurm_env);
	saved_libslurm_env = old != NULL ? strdup(old) : NULL;
	setenv("CTRUN_LIBSLURM", v, 1);
}

static void restore_libslurm_env(void)
{
	if (saved_libslurm_env != NULL)
		setenv("CTRUN_LIBSLURM", saved_libslurm_env, 1);
	else
		unsetenv("CTRUN_LIBSLURM");
	free(saved_libslurm_env);
	saved_libslurm_env = NULL;
}

static void test_libslurm_absent_is_reported(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	set_libslurm_env("/nonexistent/libslurm.so");
	assert_false(slurmlib_available());
	assert_int_equal(slurmlib_hostlist_expand("n[1-2]", &out, &e), -1);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(e.msg, "no loadable libslurm"));
	assert_int_equal(out.n, 0);
	restore_libslurm_env();
}

static void test_any_expands_without_libslurm(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	(void)state;
	set_libslurm_env("/nonexistent/libslurm.so");
	assert_int_equal(hostlist_expand_any("n[08-10]", &out, &e), 0);
	assert_int_equal(out.n, 3);
	assert_string_equal(out.v[2], "n10");
	strv_free(&out);
	restore_libslurm_env();

	if (getenv("CTRUN_NO_LIBSLURM") == NULL) {
		setenv("CTRUN_NO_LIBSLURM", "1", 1);
		assert_int_equal(hostlist_expand_any("n[08-10]", &out, &e), 0);
		assert_int_equal(out.n, 3);
		strv_free(&out);
		unsetenv("CTRUN_NO_LIBSLURM");
	}
}

static void test_any_refuses_malformed_list_even_with_libslurm(void **state)
{
	/* libslurm alone would make "n[1-" the host "n]" and "n[1, 3]" the
	 * hosts n1,n03. */
	const char *bad[] = { "n[1-", "n[1, 3]", "n[1-]", "a]b" };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct strv out = { 0 };
		struct err e = { 0 };

		if (hostlist_expand_any(bad[i], &out, &e) != -1)
			fail_msg("hostlist_expand_any(\"%s\") accepted it", bad[i]);
		assert_int_equal(e.code, EXIT_CTRUN);
		assert_int_equal(out.n, 0);
	}
}

static void test_any_gives_slurm_order(void **state)
{
	struct strv out = { 0 };
	struct err e = { 0 };
	char *got;

	(void)state;
	assert_int_equal(hostlist_expand_any("gpu[1-2]x[3,5]", &out, &e), 0);
	got = joined(&out);
	assert_string_equal(got, "gpu1x3,gpu1x5,gpu2x3,gpu2x5");
	free(got);
	strv_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_differential_against_every_libslurm),
		cmocka_unit_test(test_libslurm_expands_65536_hosts),
		cmocka_unit_test(test_libslurm_crash_is_an_error_not_ours),
		cmocka_unit_test(test_libslurm_absent_is_reported),
		cmocka_unit_test(test_any_expands_without_libslurm),
		cmocka_unit_test(test_any_refuses_malformed_list_even_with_libslurm),
		cmocka_unit_test(test_any_gives_slurm_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
