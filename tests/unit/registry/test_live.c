/* Unit tests: a blob read while it downloads (blobs.h, blob_live): the
 * reader gets every byte in order as the writer publishes them, waits for
 * more instead of taking an end, stops at a failed download or when told
 * to, and refuses to go on after the download started again from byte 0
 * (bytes already read may not be the blob's). */
#include "ctrtest.h"

#include <fcntl.h>
#include <pthread.h>

#include "blobs.h"

#define SIZE (3 * 65536 + 123)

struct writer {
	struct blob_live *b;
	int fd;
	bool restart_midway, fail;
};

/* Bytes the reader has (the writer's restart waits for its first ones). */
static volatile long long reader_has;

/* What blob_fetch does: bytes into the file, then published, in pieces. */
static void *write_blob_slowly(void *arg)
{
	struct writer *w = arg;
	char piece[4096];
	long long have = 0;

	while (have < SIZE) {
		size_t n = SIZE - have < (long long)sizeof(piece) ? (size_t)(SIZE - have) : sizeof(piece);

		for (size_t k = 0; k < n; k++)
			piece[k] = (char)((have + (long long)k) * 7 % 251);
		assert_int_equal(pwrite(w->fd, piece, n, have), (ssize_t)n);
		have += (long long)n;
		pthread_mutex_lock(&w->b->lock);
		while (w->restart_midway && have > SIZE / 2 && reader_has == 0) {
			pthread_mutex_unlock(&w->b->lock);
			usleep(1000);
			pthread_mutex_lock(&w->b->lock);
		}
		if (w->restart_midway && have > SIZE / 2) {
			w->b->gen++; /* a server that ignored a Range: from byte 0 again */
			w->restart_midway = false;
		}
		w->b->avail = have;
		pthread_cond_broadcast(&w->b->more);
		pthread_mutex_unlock(&w->b->lock);
		usleep(200);
	}
	pthread_mutex_lock(&w->b->lock);
	w->b->state = w->fail ? -1 : 1;
	pthread_cond_broadcast(&w->b->more);
	pthread_mutex_unlock(&w->b->lock);
	return NULL;
}

/* Reads the whole blob as it comes; the reader's result. */
static long long read_all(struct blob_live *b, char *out, bool (*stop)(void *), struct err *e)
{
	long long off = 0, n;
	unsigned gen = 0;

	reader_has = 0;
	while ((n = blob_live_read(b, off, out + off, 10000, &gen, stop, NULL, e)) > 0)
		reader_has = off += n;
	return n < 0 ? -1 : off;
}

static void run(struct writer *w, char *out, long long *got, bool (*stop)(void *), struct err *e)
{
	char path[] = "/tmp/ctrun-test-live-XXXXXX";
	struct blob_live b;
	pthread_t th;

	blob_live_init(&b);
	w->fd = mkstemp(path);
	assert_true(w->fd >= 0);
	unlink(path);
	b.fd = dup(w->fd);
	w->b = &b;
	assert_int_equal(pthread_create(&th, NULL, write_blob_slowly, w), 0);
	*got = read_all(&b, out, stop, e);
	pthread_join(th, NULL);
	close(w->fd);
	blob_live_free(&b);
}

static void test_a_download_is_read_whole_and_in_order(void **state)
{
	struct writer w = { 0 };
	char *out = malloc(SIZE);
	struct err e = { 0 };
	long long got;

	(void)state;
	run(&w, out, &got, NULL, &e);
	assert_int_equal(got, SIZE);
	for (long long k = 0; k < SIZE; k++)
		if (out[k] != (char)(k * 7 % 251))
			fail_msg("byte %lld differs", k);
	free(out);
}

/* The writer w ends the reader's read with a message holding msg. */
static void expect_read_to_fail(struct writer w, const char *msg)
{
	char *out = malloc(SIZE);
	struct err e = { 0 };
	long long got;

	run(&w, out, &got, NULL, &e);
	assert_int_equal(got, -1);
	assert_non_null(strstr(e.msg, msg));
	free(out);
}

static void test_a_restart_after_the_first_byte_is_refused(void **state)
{
	(void)state;
	expect_read_to_fail((struct writer){ .restart_midway = true }, "pull again");
}

static void test_a_failed_download_ends_the_read(void **state)
{
	(void)state;
	expect_read_to_fail((struct writer){ .fail = true }, "download failed");
}

static bool always(void *arg)
{
	(void)arg;
	return true;
}

/* Another layer failed: the reader does not wait for this one. */
static void test_a_stopped_pull_ends_the_read(void **state)
{
	struct blob_live b;
	struct err e = { 0 };
	char buf[16];
	unsigned gen = 0;

	/* Nothing ever writes b: a read that waited would never return. */
	(void)state;
	blob_live_init(&b);
	assert_int_equal(blob_live_read(&b, 0, buf, sizeof(buf), &gen, always, NULL, &e), -1);
	blob_live_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_download_is_read_whole_and_in_order),
		cmocka_unit_test(test_a_restart_after_the_first_byte_is_refused),
		cmocka_unit_test(test_a_failed_download_ends_the_read),
		cmocka_unit_test(test_a_stopped_pull_ends_the_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
