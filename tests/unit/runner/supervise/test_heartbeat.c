/* Unit tests: the hang watch's side of the supervisor (supervise_opts
 * on_progress, heartbeat.h): every tick tells how long each worker has been
 * silent, a line of output or a touch of the worker's heartbeat file is
 * progress, and a callback that calls the workers hung stops them without
 * naming a failure.  The ticks are the event waited for; no duration is
 * asserted, only which worker was silent longer. */
#define CTRTEST_SUPERVISE
#include "ctrtest.h"

#include <sys/stat.h>

#include "heartbeat.h"

/* The callback's record, in the child playing ctrun: one line per tick,
 * "SILENT0 SILENT1", into TICKS (a file of the run's directory). */
static char ticks_path[PATH_MAX];
static int hang_after; /* ticks before it calls the workers hung; 0 never */

static bool record(void *arg, const struct worker *w, const long long *silent,
		   const bool *started, size_t n)
{
	static int count;
	FILE *f = fopen(ticks_path, "a");

	(void)arg;
	(void)w;
	if (f != NULL) {
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%lld %d", i ? " " : "", silent[i], started[i]);
		fputc('\n', f);
		fclose(f);
	}
	return hang_after > 0 && ++count >= hang_after;
}

/* The last tick's silences that the test's wait found; rank 0 made
 * progress, rank 1 none since it started. */
static void last_tick(long long *s0, long long *s1)
{
	char *text = read_file(ticks_path, NULL), *last;
	int b0, b1;

	assert_non_null(text);
	text[strlen(text) - 1] = '\0';
	last = strrchr(text, '\n');
	assert_int_equal(sscanf(last != NULL ? last + 1 : text, "%lld %d %lld %d", s0, &b0, s1,
				&b1), 4);
	assert_int_equal(b0, 1);
	assert_int_equal(b1, 0);
	free(text);
}

static void setup_run(const char *script, const char *hbdir)
{
	prepare(&rn, 2, script);
	snprintf(ticks_path, sizeof(ticks_path), "%s/ticks", rn.dir);
	rn.o.on_progress = record;
	rn.o.heartbeat_dir = hbdir;
}

/* Each stops when the test's file STOP appears; rank 0 prints meanwhile. */
static void test_output_is_progress(void **state)
{
	long long s0, s1;
	struct msg m;

	(void)state;
	hang_after = 0;
	setup_run("while [ ! -e \"$TDIR/stop\" ]; do [ $RANK = 0 ] && echo tick; sleep 0.05; done",
		  NULL);
	start(&rn, 2);
	/* Three ticks: rank 1 has said nothing for three seconds by then. */
	assert_true(wait_file(&rn, "ticks", HANG_GUARD_MS));
	while (1) {
		char *t = slurp(&rn, "ticks");
		size_t lines = 0;

		for (char *p = t; *p != '\0'; p++)
			lines += *p == '\n';
		free(t);
		if (lines >= 3)
			break;
		usleep(50 * 1000);
	}
	last_tick(&s0, &s1);
	touch(path_in(&rn, "stop"));
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
	assert_false(m.r.hung);
	assert_true(s1 > s0);
}

/* The heartbeat file, not output: rank 0 touches its own, rank 1 nothing. */
static void test_a_touch_of_the_heartbeat_file_is_progress(void **state)
{
	static char hb[PATH_MAX], var[2][PATH_MAX];
	long long s0, s1;
	struct msg m;
	size_t k;

	(void)state;
	hang_after = 0;
	setup_run("while [ ! -e \"$TDIR/stop\" ]; do [ $RANK = 0 ] && touch \"$" PROGRESS_ENV
		  "\"; sleep 0.05; done", hb);
	/* In the run's directory: teardown removes it, passed or not. */
	snprintf(hb, sizeof(hb), "%s/hb", rn.dir);
	assert_int_equal(mkdir(hb, 0700), 0);
	for (size_t i = 0; i < 2; i++) {
		for (k = 0; rn.env[i][k] != NULL; k++)
			;
		snprintf(var[i], sizeof(var[i]), PROGRESS_ENV "=%s/rank-%zu", hb, i);
		rn.env[i][k] = var[i];
	}
	start(&rn, 2);
	for (;;) {
		char *t = wait_file(&rn, "ticks", HANG_GUARD_MS) ? slurp(&rn, "ticks") : NULL;
		size_t lines = 0;

		assert_non_null(t);
		for (char *p = t; *p != '\0'; p++)
			lines += *p == '\n';
		free(t);
		if (lines >= 3)
			break;
		usleep(50 * 1000);
	}
	last_tick(&s0, &s1);
	touch(path_in(&rn, "stop"));
	m = finish_result(&rn);
	reap_child(&rn);
	assert_int_equal(m.r.status, 0);
	assert_true(s1 > s0);
	/* The files went with the run; the directory is the caller's. */
	assert_int_equal(rmdir(hb), 0);
}

/* Hung: stopped with SIGTERM, no rank named as failing first. */
static void test_hung_workers_are_stopped_without_a_failure(void **state)
{
	struct msg m;
	char *err;

	(void)state;
	hang_after = 2;
	setup_run("exec sleep 30", NULL);
	m = run(&rn, 2);
	assert_true(m.r.hung);
	assert_int_equal(m.r.status, 143);
	err = slurp(&rn, "err");
	assert_null(strstr(err, "failed first"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_output_is_progress, teardown),
		cmocka_unit_test_teardown(test_a_touch_of_the_heartbeat_file_is_progress, teardown),
		cmocka_unit_test_teardown(test_hung_workers_are_stopped_without_a_failure, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
