/* Unit tests: a step's ctrun uses the batch step's staged copy only when
 * it was staged for this image and is a whole file of the caller's, not a
 * symlink, in a directory no one else can enter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "stage.h"

static char dir[] = "/tmp/ctrun-test-stage-XXXXXX", img[64], copy[64];

static void write_bytes(const char *path, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fputc('x', f);
	fclose(f);
}

static void test_the_copy_is_used_only_when_whole_and_ours(void **state)
{
	char from[96], to[96];
	char *envp[] = { from, to, NULL }, *none[] = { NULL };
	const char *note;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img.sqsh", dir);
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	snprintf(from, sizeof(from), "CTRUN_STAGED_FROM=%s", img);
	snprintf(to, sizeof(to), "CTRUN_STAGED_TO=%s", copy);
	write_bytes(img, 100);
	write_bytes(copy, 100);
	assert_string_equal(stage_local(img, envp, &note), copy);
	assert_null(note);
	/* Nothing staged, or staged for another image: the image itself. */
	assert_string_equal(stage_local(img, none, &note), img);
	assert_null(note);
	assert_string_equal(stage_local("/other.sqsh", envp, &note), "/other.sqsh");
	/* Short (a failed copy), someone else's, or missing: refused, said. */
	write_bytes(copy, 10);
	assert_string_equal(stage_local(img, envp, &note), img);
	assert_non_null(strstr(note, "not whole"));
	write_bytes(copy, 100);
	assert_int_equal(geteuid(), 0); /* make check runs as root */
	assert_int_equal(chown(copy, 65534, 65534), 0);
	assert_string_equal(stage_local(img, envp, &note), img);
	assert_non_null(note);
	unlink(copy);
	assert_string_equal(stage_local(img, envp, &note), img);
	assert_non_null(note);
	/* A symlink, even to a whole file of ours: not what sbcast made. */
	assert_int_equal(symlink(img, copy), 0);
	assert_string_equal(stage_local(img, envp, &note), img);
	assert_non_null(note);
	unlink(copy);
	/* In a directory others may enter (and so may have put it there). */
	write_bytes(copy, 100);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_string_equal(stage_local(img, envp, &note), img);
	assert_non_null(strstr(note, "not in a directory of yours alone"));
	unlink(copy);
	unlink(img);
	rmdir(dir);
}

static void test_local_file_systems_are_not_network(void **state)
{
	(void)state;
	assert_false(stage_on_network_fs("/proc"));
	assert_false(stage_on_network_fs("/nonexistent/path"));
}

/* auto never stages onto a stage directory every node sees (a network
 * file system), nor for one node or an image on a local file system;
 * --stage sbcast always tries (the nodes' prepare tells a shared one). */
static void test_auto_never_stages_onto_a_network_stage_directory(void **state)
{
	(void)state;
	assert_int_equal(stage_choose(false, 2, true, false), STAGE_TRY);
	assert_int_equal(stage_choose(false, 2, true, true), STAGE_NOT_SHARED);
	assert_int_equal(stage_choose(false, 1, true, false), STAGE_NOT);
	assert_int_equal(stage_choose(false, 2, false, false), STAGE_NOT);
	assert_int_equal(stage_choose(false, 2, false, true), STAGE_NOT);
	assert_int_equal(stage_choose(true, 1, false, true), STAGE_TRY);
}

/* What the prepare step's tasks print, through srun: each node that found
 * the job's directory made by another says so on a line of its own, bare
 * or with srun's label; nothing else counts. */
static void test_nodes_that_found_the_directory_are_counted(void **state)
{
	static const char out[] =
		"ctrun-stage: the job's directory was there already\n"
		"3: ctrun-stage: the job's directory was there already\n"
		"xctrun-stage: the job's directory was there already\n"
		"ctrun-stage: the job's directory was there already, or not\n"
		"ctrun-stage: the job's directory was there\n"
		"\n"
		"ctrun-stage: the job's directory was "; /* ended by the next write */
	static const char line[] = "ctrun-stage: the job's directory was there already\n";
	char big[9000];
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], out, sizeof(out) - 1), (ssize_t)(sizeof(out) - 1));
	assert_int_equal(write(fds[1], "there already\n", 14), 14);
	/* An overlong line that ends like one is not one. */
	memset(big, 'x', sizeof(big));
	memcpy(big + sizeof(big) - strlen(line), line, strlen(line));
	assert_int_equal(write(fds[1], big, sizeof(big)), (ssize_t)sizeof(big));
	close(fds[1]);
	assert_int_equal(stage_count_shared(fds[0]), 3);
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_copy_is_used_only_when_whole_and_ours),
		cmocka_unit_test(test_local_file_systems_are_not_network),
		cmocka_unit_test(test_auto_never_stages_onto_a_network_stage_directory),
		cmocka_unit_test(test_nodes_that_found_the_directory_are_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
