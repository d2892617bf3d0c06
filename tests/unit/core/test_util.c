/* Unit tests: core's strict parsers and file helpers (util.h). */
#include <fcntl.h>
#include <sys/stat.h>

#include "ctrtest.h"
#include "util.h"

static void test_parse_size(void **state)
{
	unsigned long long v;

	(void)state;
	assert_int_equal(parse_size("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_size("50G", &v), 0);
	assert_int_equal(v, 50ULL << 30);
	assert_int_equal(parse_size("1.5k", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(parse_size("2TiB", &v), 0);
	assert_int_equal(v, 2ULL << 40);
	assert_int_equal(parse_size("", &v), -1);
	assert_int_equal(parse_size("-1G", &v), -1);
	assert_int_equal(parse_size("10X", &v), -1);
	assert_int_equal(parse_size("10GG", &v), -1);
}

/* A FIFO someone put where a file was expected: the open returns at once
 * (no writer would ever come) and says it is not a regular file. */
static void test_open_regular_refuses_fifo_without_blocking(void **state)
{
	struct tmpdir *td = *state;
	const char *fifo = tmpdir_path(td, "fifo"), *file = tmpdir_path(td, "file");
	struct stat st;
	int fd;

	assert_int_equal(mkfifo(fifo, 0600), 0);
	errno = 0;
	assert_int_equal(open_regular(fifo, O_RDONLY, &st), -1);
	assert_int_equal(errno, EINVAL);
	assert_true(S_ISFIFO(st.st_mode));
	/* A directory and a link under O_NOFOLLOW are no regular files either. */
	assert_int_equal(open_regular(td->dir, O_RDONLY, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(symlink(fifo, file), 0);
	assert_int_equal(open_regular(file, O_RDONLY | O_NOFOLLOW, NULL), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(open_regular(file, O_RDONLY, NULL), -1);
	assert_int_equal(errno, ENOENT);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	fd = open_regular(file, O_RDONLY | O_NOFOLLOW, &st);
	assert_true(fd >= 0);
	assert_true(S_ISREG(st.st_mode));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test_setup_teardown(test_open_regular_refuses_fifo_without_blocking,
						tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
