/* Unit tests: core's cleanup attributes (cleanup.h): memory, descriptors
 * and string vectors let go on every way out of a scope, the early return
 * included, and a value moved out (take_ptr, take_fd) not let go.
 *
 * free and strv_free are counted: the names are redefined around the
 * header, so its helpers call the counters, which call the real ones. */
#include "ctrtest.h"

#include <fcntl.h>

#include "strv.h"

static void *freed[8];
static size_t nfreed;
static size_t nstrv;

static void counted_free(void *p)
{
	if (p != NULL && nfreed < sizeof(freed) / sizeof(freed[0]))
		freed[nfreed++] = p;
	free(p);
}

static void counted_strv_free(struct strv *s)
{
	if (s->v != NULL)
		nstrv++;
	strv_free(s);
}

#define free counted_free
#define strv_free counted_strv_free
#include "cleanup.h"
#undef free

static int reset(void **state)
{
	(void)state;
	nfreed = 0;
	nstrv = 0;
	return 0;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Owns p and fd and v; returns early (before the end) when early. */
static int owner(bool early, void **p_out, int *fd_out)
{
	cleanup_free char *p = strdup("held");
	cleanup_close int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cleanup_strv struct strv v = { 0 };

	assert_non_null(p);
	assert_true(fd >= 0);
	assert_int_equal(strv_push(&v, "a"), 0);
	*p_out = p;
	*fd_out = fd;
	if (early)
		return -1;
	p[0] = 'H';
	return 0;
}

static void test_scope_exit_lets_go(void **state)
{
	void *p;
	int fd;

	(void)state;
	assert_int_equal(owner(false, &p, &fd), 0);
	assert_int_equal(nfreed, 1);
	assert_ptr_equal(freed[0], p);
	assert_false(fd_open(fd));
	assert_int_equal(nstrv, 1);
}

static void test_early_return_lets_go(void **state)
{
	void *p;
	int fd;

	(void)state;
	assert_int_equal(owner(true, &p, &fd), -1);
	assert_int_equal(nfreed, 1);
	assert_ptr_equal(freed[0], p);
	assert_false(fd_open(fd));
	assert_int_equal(nstrv, 1);
}

/* Made here, handed to the caller: moved out, so not let go. */
static char *made(int *fd_out)
{
	cleanup_free char *p = strdup("kept");
	cleanup_close int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_non_null(p);
	assert_true(fd >= 0);
	*fd_out = take_fd(&fd);
	assert_int_equal(fd, -1);
	return take_ptr(&p);
}

static void test_moved_out_is_kept(void **state)
{
	int fd;
	char *p = made(&fd);

	(void)state;
	assert_int_equal(nfreed, 0);
	assert_string_equal(p, "kept");
	assert_true(fd_open(fd));
	close(fd);
	free(p);
}

static void test_unset_values_let_nothing_go(void **state)
{
	(void)state;
	{
		cleanup_free char *p = NULL;
		cleanup_close int fd = -1;
		cleanup_strv struct strv v = { 0 };

		(void)p;
		(void)fd;
		(void)v;
	}
	assert_int_equal(nfreed, 0);
	assert_int_equal(nstrv, 0);
}

/* The error a function returns with is its own, not the close's. */
static void test_close_keeps_errno(void **state)
{
	(void)state;
	{
		cleanup_close int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		errno = ENOSPC;
	}
	assert_int_equal(errno, ENOSPC);
	{
		cleanup_close int fd = 1000000; /* closing it fails: EBADF */

		(void)fd;
		errno = ENOSPC;
	}
	assert_int_equal(errno, ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_scope_exit_lets_go, reset),
		cmocka_unit_test_setup(test_early_return_lets_go, reset),
		cmocka_unit_test_setup(test_moved_out_is_kept, reset),
		cmocka_unit_test_setup(test_unset_values_let_nothing_go, reset),
		cmocka_unit_test_setup(test_close_keeps_errno, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
