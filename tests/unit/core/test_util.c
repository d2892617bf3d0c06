/* Unit tests: core's strict parsers and file helpers (util.h). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

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

/* A writer that never stops (a hostile image's endless file, a FIFO fed
 * forever): read_fd_max stops at its bound, and one byte past it tells a
 * caller that must refuse a longer file. */
static void test_read_fd_max_stops_at_its_bound(void **state)
{
	char chunk[1000];
	size_t len = 99;
	int fds[2];
	pid_t pid;
	char *buf;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		for (;;)
			if (write(fds[1], chunk, sizeof(chunk)) < 0)
				_exit(0);
	}
	close(fds[1]);
	buf = read_fd_max(fds[0], 10001, &len);
	assert_non_null(buf);
	assert_int_equal(len, 10001);
	assert_int_equal(buf[len], '\0');
	assert_int_equal(strspn(buf, "x"), 10001);
	free(buf);
	close(fds[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* A file shorter than the bound: all of it, NUL-terminated, in pieces as a
 * pipe delivers them; an empty one is "" and not an error. */
static void test_read_fd_max_reads_to_the_end(void **state)
{
	struct tmpdir *td = *state;
	const char *path = tmpdir_path(td, "f");
	size_t len = 99;
	char *buf;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "KEY=1\n", 6), 6);
	close(fd);
	fd = open(path, O_RDONLY);
	buf = read_fd_max(fd, 1 << 20, &len);
	assert_non_null(buf);
	assert_int_equal(len, 6);
	assert_string_equal(buf, "KEY=1\n");
	free(buf);
	close(fd);
	fd = open("/dev/null", O_RDONLY);
	buf = read_fd_max(fd, 100, &len);
	assert_non_null(buf);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	close(fd);
	/* A read error: NULL with its errno. */
	fd = open(td->dir, O_RDONLY | O_DIRECTORY);
	errno = 0;
	assert_null(read_fd_max(fd, 100, &len));
	assert_int_equal(errno, EISDIR);
	close(fd);
}

static void test_mono_ms_is_the_monotonic_clock(void **state)
{
	long long a = mono_ms(), n = mono_ns();

	(void)state;
	assert_true(a > 0);
	assert_true(n / 1000000 >= a);
	usleep(20000);
	assert_true(mono_ms() - a >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test_setup_teardown(test_open_regular_refuses_fifo_without_blocking,
						tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test(test_read_fd_max_stops_at_its_bound),
		cmocka_unit_test_setup_teardown(test_read_fd_max_reads_to_the_end, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_mono_ms_is_the_monotonic_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
