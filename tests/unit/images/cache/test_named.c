/* Unit tests: named containers (--name): the name check, the record, and
 * the store's layout in a real temporary cache (make, continue, a changed
 * image refused, reset, runs sharing one and what needs it alone, the
 * doors' names, list, remove). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/named.h"
#include "rootpath.h"

static char root[] = "/tmp/ctrun-test-named.XXXXXX";
static char cachedir[256];
static struct cache_cfg cfg;

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(cachedir, sizeof(cachedir), "%s/cache", root);
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = cachedir;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(root);
	return 0;
}

static void refused(const char *name, const char *what)
{
	struct err e = { 0 };

	assert_int_equal(named_check_name(name, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	if (strstr(e.msg, what) == NULL)
		fail_msg("%s: '%s' does not say '%s'", name, e.msg, what);
}

static void test_names_that_are_paths_or_odd_are_refused(void **state)
{
	char longname[NAMED_NAME_MAX + 2];
	struct err e = { 0 };

	(void)state;
	refused("", "empty");
	refused("a/b", "not a path");
	refused("..", "must not start with '.'");
	refused(".", "must not start with '.'");
	refused(".hidden", "must not start with '.'");
	refused("-rf", "must not start with '-'");
	refused("dev env", "0x20 at position 4");
	refused("x\n", "0x0a at position 2");
	refused("caf\xc3\xa9", "0xc3 at position 4");
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	refused(longname, "longer than 64 bytes");
	longname[NAMED_NAME_MAX] = '\0';
	assert_int_equal(named_check_name(longname, &e), 0);
	assert_int_equal(named_check_name("dev", &e), 0);
	assert_int_equal(named_check_name("torch-2.3_py3.11", &e), 0);
}

static void test_record_round_trip_keeps_any_path(void **state)
{
	char buf[8192], id[64], image[4096];
	struct err e = { 0 };
	const char *path = "/scratch/my images/x\nnewline.sqsh";

	(void)state;
	assert_int_equal(named_record_format("squashfs-0123abcd", path, buf, sizeof(buf)), 0);
	assert_int_equal(named_record_parse(buf, strlen(buf), id, sizeof(id), image, sizeof(image),
					    &e), 0);
	assert_string_equal(id, "squashfs-0123abcd");
	assert_string_equal(image, path);
	/* Hostile records: no newline, an identity with other bytes, a NUL. */
	assert_int_equal(named_record_parse("abc", 3, id, sizeof(id), image, sizeof(image), &e), -1);
	assert_int_equal(named_record_parse("../x\n/i\n", 8, id, sizeof(id), image, sizeof(image),
					    &e), -1);
	assert_int_equal(named_record_parse("ab\n/i\0x\n", 8, id, sizeof(id), image, sizeof(image),
					    &e), -1);
	assert_int_equal(named_record_parse("ab\n/i\n", 6, id, 2, image, sizeof(image), &e), -1);
}

static void write_in(const char *dir, const char *name)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("changed\n", f);
	fclose(f);
}

static void test_made_once_then_continued_with_its_changes(void **state)
{
	struct named_req q = { &cfg, "dev", "/img/a.sqsh", "squashfs-aaaa", false, false };
	struct named n;
	struct err e = { 0 };
	struct stat st;
	char path[4200];

	(void)state;
	assert_int_equal(named_open(&q, &n, &e), 0);
	assert_true(n.created);
	assert_non_null(strstr(n.upper, "/cache/containers/dev/upper"));
	assert_non_null(strstr(n.work, "/cache/containers/dev/work"));
	assert_int_equal(stat(n.upper, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(path, sizeof(path), "%s/containers", cachedir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	write_in(n.upper, "kept");
	named_close(&n);
	assert_int_equal(named_open(&q, &n, &e), 0);
	assert_false(n.created);
	snprintf(path, sizeof(path), "%s/kept", n.upper);
	assert_int_equal(access(path, F_OK), 0);
	named_close(&n);
}

static void test_another_image_is_refused_unless_reset(void **state)
{
	struct named_req q = { &cfg, "dev2", "/img/a.sqsh", "squashfs-aaaa", false, false };
	struct named n;
	struct err e = { 0 };
	char path[4200];

	(void)state;
	assert_int_equal(named_open(&q, &n, &e), 0);
	write_in(n.upper, "old");
	named_close(&n);
	q.image = "/img/b.sqsh";
	q.identity = "squashfs-bbbb";
	assert_int_equal(named_open(&q, &n, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--name dev2 was made from /img/a.sqsh, and /img/b.sqsh is "
			    "another image (or that file changed since): add --name-reset to start "
			    "dev2 anew from it (its changes are lost), or choose another name");
	assert_int_equal(n.lock_fd, -1);
	q.image = "/img/a.sqsh"; /* the same path, replaced since */
	assert_int_equal(named_open(&q, &n, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_string_equal(e.msg, "--name dev2 was made from /img/a.sqsh, which changed since "
			    "(replaced or modified): add --name-reset to start dev2 anew from it (its "
			    "changes are lost), or choose another name");
	q.image = "/img/b.sqsh";
	q.reset = true;
	assert_int_equal(named_open(&q, &n, &e), 0);
	assert_true(n.created);
	snprintf(path, sizeof(path), "%s/old", n.upper);
	assert_int_equal(access(path, F_OK), -1);
	named_close(&n);
	q.reset = false; /* b is its image now */
	assert_int_equal(named_open(&q, &n, &e), 0);
	named_close(&n);
}

/* Runs share a named container (the gate held only while each takes it);
 * what needs it alone (--name-reset, --save, remove) is refused while any
 * uses it, and a run is refused while one has it alone. */
static void test_runs_share_it_and_what_needs_it_alone_is_refused(void **state)
{
	struct named_req q = { &cfg, "busy", "/img/a.sqsh", "squashfs-aaaa", false, false };
	struct named n, m, x;
	struct named_entry *v;
	struct err e = { 0 };
	bool found, seen = false;
	size_t cnt;

	(void)state;
	assert_int_equal(named_open(&q, &n, &e), 0);
	assert_true(n.gate_fd >= 0);
	assert_false(n.exclusive);
	assert_int_equal(named_claim(&n, &e), 0); /* the first: nobody else */
	assert_int_equal(named_share(&n, &e), 0);
	named_gate_release(&n);
	assert_int_equal(named_open(&q, &m, &e), 0);
	assert_int_equal(named_claim(&m, &e), -1); /* n uses it */
	assert_non_null(strstr(e.msg, "--name busy: in use by pid "));
	assert_int_equal(named_share(&m, &e), 0);
	named_gate_release(&m);
	q.exclusive = true;
	assert_int_equal(named_open(&q, &x, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "--name busy: in use by pid "));
	assert_non_null(strstr(e.msg, "--name-reset, --save and ctrun save need"));
	assert_int_equal(named_remove(&cfg, "busy", &found, &e), -1);
	assert_non_null(strstr(e.msg, "cache remove busy: in use by pid "));
	assert_int_equal(named_list(&cfg, &v, &cnt, &e), 0);
	for (size_t i = 0; i < cnt; i++)
		if (strcmp(v[i].name, "busy") == 0)
			seen = v[i].in_use;
	free(v);
	assert_true(seen);
	named_close(&n);
	named_close(&m);
	/* One that has it alone: the others cannot share it meanwhile. */
	assert_int_equal(named_open(&q, &n, &e), 0);
	assert_true(n.exclusive);
	named_gate_release(&n);
	q.exclusive = false;
	assert_int_equal(named_open(&q, &m, &e), 0);
	assert_int_equal(named_share(&m, &e), -1);
	assert_non_null(strstr(e.msg, "has it to itself"));
	named_close(&m);
	named_close(&n);
	assert_int_equal(named_remove(&cfg, "busy", &found, &e), 0);
	assert_true(found);
	assert_int_equal(named_remove(&cfg, "busy", &found, &e), 0);
	assert_false(found);
}

static void test_door_names(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(named_door_name("dev.1", 4242, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "container-dev.1.4242.sock");
	assert_int_equal(named_door_pid(buf, "dev.1"), 4242);
	/* Another name's door, a lock, odd pids: not a door of dev. */
	assert_int_equal(named_door_pid("container-dev.1.4242.sock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.lock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.gate", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.0.sock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.012.sock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.-1.sock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.12.sock.x", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.99999999999.sock", "dev"), -1);
	assert_int_equal(named_door_pid("container-dev.7.sock", "dev"), 7);
	assert_int_equal(named_door_name("x", 1, buf, 8), -1);
}

static void test_list_shows_name_image_size_and_skips_temporaries(void **state)
{
	struct named_req q = { &cfg, "listed", "/img/l.sqsh", "squashfs-1111", false, false };
	struct named n;
	struct named_entry *v;
	struct err e = { 0 };
	char path[4200];
	size_t cnt;
	int seen = 0;

	(void)state;
	assert_int_equal(named_open(&q, &n, &e), 0);
	write_in(n.upper, "file");
	named_close(&n);
	snprintf(path, sizeof(path), "%s/containers/listed.ctrun-tmp.h.1", cachedir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(named_list(&cfg, &v, &cnt, &e), 0);
	for (size_t i = 0; i < cnt; i++) {
		assert_null(strstr(v[i].name, ".ctrun-tmp."));
		if (strcmp(v[i].name, "listed") != 0)
			continue;
		seen++;
		assert_string_equal(v[i].image, "/img/l.sqsh");
		assert_true(v[i].bytes > 0);
		assert_true(v[i].last_use > 0);
		assert_false(v[i].in_use);
	}
	assert_int_equal(seen, 1);
	free(v);
}

/* gc removes only the containers that can never be continued: their image
 * is gone or changed (another identity). */
static void test_gc_removes_only_those_whose_image_changed(void **state)
{
	char img[300], keep_id[64], gone_id[64];
	struct named_req q = { &cfg, "gc-keep", img, keep_id, false, false };
	struct named n;
	struct err e = { 0 };
	unsigned long long freed;
	size_t removed;
	bool found;

	(void)state;
	snprintf(img, sizeof(img), "%s/img.sqsh", root);
	write_in(root, "img.sqsh");
	assert_int_equal(cache_identity(img, keep_id, sizeof(keep_id), &e), 0);
	assert_int_equal(named_open(&q, &n, &e), 0);
	named_close(&n);
	snprintf(gone_id, sizeof(gone_id), "squashfs-00000000000000000000000000000000");
	q.name = "gc-gone";
	q.identity = gone_id; /* made from a file that has another identity now */
	assert_int_equal(named_open(&q, &n, &e), 0);
	named_close(&n);
	assert_int_equal(named_gc(&cfg, &removed, &freed, &e), 0);
	/* and the earlier tests' ones, made from /img/ files that do not exist */
	assert_true(removed >= 1);
	assert_int_equal(named_remove(&cfg, "gc-gone", &found, &e), 0);
	assert_false(found);
	assert_int_equal(named_remove(&cfg, "gc-keep", &found, &e), 0);
	assert_true(found);
}

static void test_shared_cache_has_no_named_containers(void **state)
{
	struct cache_cfg shared = cfg;
	struct named_req q = { &shared, "x", "/img/a.sqsh", "squashfs-aaaa", false, false };
	struct named n;
	struct err e = { 0 };

	(void)state;
	shared.shared = true;
	assert_int_equal(named_open(&q, &n, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_that_are_paths_or_odd_are_refused),
		cmocka_unit_test(test_record_round_trip_keeps_any_path),
		cmocka_unit_test(test_made_once_then_continued_with_its_changes),
		cmocka_unit_test(test_another_image_is_refused_unless_reset),
		cmocka_unit_test(test_runs_share_it_and_what_needs_it_alone_is_refused),
		cmocka_unit_test(test_door_names),
		cmocka_unit_test(test_list_shows_name_image_size_and_skips_temporaries),
		cmocka_unit_test(test_gc_removes_only_those_whose_image_changed),
		cmocka_unit_test(test_shared_cache_has_no_named_containers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
