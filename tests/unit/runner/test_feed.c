/* Unit tests of the image feed's wire (runner/feed_wire.c, feed.h): hellos,
 * heads and tails are taken only from holders of the job's key and only on
 * their own link; an image and node 0's layer record cross a link (and are
 * forwarded down the chain) byte for byte; bytes of the image or of the
 * record changed on the way, a tail of another key or a connection that
 * ends early leave nothing at the temporary name nor at the final one. */
#include "ctrtest.h"

#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <nettle/sha2.h>

#include "feed.h"

static const uint8_t key[JOBKEY_LEN] = { 1, 2, 3 };
static const uint8_t other[JOBKEY_LEN] = { 9, 9, 9 };
static const char digest[] = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char record[] = "ctrun-layers 1\n"
			     "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n";

#define SIZE (3 * (1 << 20) + 12345)

static void test_hello(void **state)
{
	struct feed_hello h, h2;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(feed_hello_make(&h, key, "12.0", "n1", &e), 0);
	assert_true(feed_hello_ok(&h, key, "12.0"));
	assert_false(feed_hello_ok(&h, other, "12.0"));
	assert_false(feed_hello_ok(&h, key, "12.1")); /* another step's */
	h2 = h;
	h2.host[0] = 'x'; /* what the MAC covers */
	assert_false(feed_hello_ok(&h2, key, "12.0"));
	h2 = h;
	memset(h2.job, 'a', sizeof(h2.job)); /* unterminated */
	assert_false(feed_hello_ok(&h2, key, "12.0"));
	assert_int_equal(feed_hello_make(&h2, key, "12.0", "n1", &e), 0);
	assert_memory_not_equal(h.nonce, h2.nonce, FEED_NONCE_LEN);
}

static void test_head(void **state)
{
	struct feed_hello h, h2;
	struct feed_head hd, bad;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(feed_hello_make(&h, key, "12.0", "n1", &e), 0);
	assert_int_equal(feed_hello_make(&h2, key, "12.0", "n2", &e), 0);
	feed_head_make(&hd, key, &h, 0, digest, 42, 0, "");
	assert_true(feed_head_ok(&hd, key, &h));
	assert_false(feed_head_ok(&hd, other, &h));
	assert_false(feed_head_ok(&hd, key, &h2)); /* replayed on another link */
	bad = hd;
	bad.size = htobe64(43);
	assert_false(feed_head_ok(&bad, key, &h));
	bad = hd;
	bad.layers = htobe32(10); /* the record's length is MAC'd */
	assert_false(feed_head_ok(&bad, key, &h));
	feed_head_make(&bad, key, &h, 0, "sha256:../../etc", 42, 0, "");
	assert_false(feed_head_ok(&bad, key, &h)); /* a digest that is no digest */
	feed_head_make(&bad, key, &h, 7, digest, 42, 0, "");
	assert_false(feed_head_ok(&bad, key, &h));
	feed_head_make(&bad, key, &h, 1, "", 0, 0, "no such tag");
	assert_true(feed_head_ok(&bad, key, &h)); /* node 0's error */
	feed_head_make(&bad, key, &h, 1, "", 0, 10, "no such tag");
	assert_false(feed_head_ok(&bad, key, &h)); /* an error with a record */
	feed_head_make(&bad, key, &h, 0, digest, 42, FEED_LAYERS_MAX, "");
	assert_true(feed_head_ok(&bad, key, &h));
	feed_head_make(&bad, key, &h, 0, digest, 42, FEED_LAYERS_MAX + 1, "");
	assert_false(feed_head_ok(&bad, key, &h)); /* a record larger than any */
}

/* The image: SIZE bytes of a pattern, and its SHA-256. */
static void image(struct tmpdir *td, char *path, uint8_t sum[FEED_SUM_LEN])
{
	static char buf[SIZE];
	struct sha256_ctx h;
	int fd;

	for (size_t i = 0; i < SIZE; i++)
		buf[i] = (char)(i * 7 + i / 4096);
	snprintf(path, PATH_MAX, "%s", tmpdir_path(td, "image"));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, buf, SIZE), 0);
	close(fd);
	sha256_init(&h);
	sha256_update(&h, SIZE, (uint8_t *)buf);
	sha256_digest(&h, FEED_SUM_LEN, sum);
}

/* What node k-1 sends on a link: the real image and record (layers, ""
 * none) through feed_send_image, or (flip >= 0) a hand-made stream whose
 * byte `flip` is changed, or (flip_layers) whose record's last byte is,
 * or (cut) one that ends half way, or whose tail is MAC'd with tail_key. */
struct sender {
	int fd;
	const char *path;
	struct feed_hello hello;
	long flip;
	bool cut, flip_layers;
	const uint8_t *tail_key;
	const char *layers;
	uint8_t sum[FEED_SUM_LEN];
};

static void *send_thread(void *arg)
{
	struct sender *s = arg;
	struct feed_down d = { .fd = s->fd, .hello = s->hello };
	struct err e = { 0 };
	static char buf[SIZE];
	struct feed_head hd;
	struct feed_tail t;
	const char *layers = s->layers != NULL ? s->layers : "";
	uint32_t n = (uint32_t)strlen(layers);
	int fd = open(s->path, O_RDONLY);

	if (s->flip < 0 && !s->cut && !s->flip_layers && s->tail_key == key) {
		feed_send_image(fd, &d, key, digest, SIZE, layers, n, &e);
	} else {
		char changed[sizeof(record)];

		assert_int_equal(read(fd, buf, SIZE), SIZE);
		feed_head_make(&hd, key, &s->hello, 0, digest, SIZE, n, "");
		feed_send(s->fd, &hd, sizeof(hd));
		assert_true(n < sizeof(changed));
		memcpy(changed, layers, n);
		if (s->flip_layers && n > 0)
			changed[n - 1] ^= 1;
		feed_send(s->fd, changed, n);
		if (s->flip >= 0)
			buf[s->flip] ^= 1;
		feed_send(s->fd, buf, s->cut ? SIZE / 2 : SIZE);
		feed_tail_make(&t, s->tail_key, &s->hello, &hd, s->sum, layers);
		if (!s->cut)
			feed_send(s->fd, &t, sizeof(t));
	}
	close(fd);
	close(s->fd);
	return NULL;
}

/* One link: sender s into the receiver, which writes tmp and publishes
 * final; downstream (when down >= 0) gets what it forwards; the record
 * received into got (when not NULL: sizeof(record) bytes).  The
 * receiver's result. */
static int link_run(struct sender *s, struct tmpdir *td, int down, struct feed_hello *dh,
		    char *got, struct err *e)
{
	struct feed_down d = { .fd = down };
	struct feed_head hd;
	char *layers;
	pthread_t th;
	int sv[2], rv;

	if (dh != NULL)
		d.hello = *dh;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(feed_hello_make(&s->hello, key, "12.0", "n1", e), 0);
	s->fd = sv[0];
	assert_int_equal(pthread_create(&th, NULL, send_thread, s), 0);
	assert_int_equal(feed_recv(sv[1], &hd, sizeof(hd), mono_ms() + 10000), 0);
	assert_true(feed_head_ok(&hd, key, &s->hello));
	assert_int_equal(feed_recv_layers(sv[1], &hd, &layers, mono_ms() + 10000), 0);
	if (got != NULL)
		snprintf(got, sizeof(record), "%s", layers);
	rv = feed_recv_image(sv[1], &s->hello, &hd, layers, &d, key, tmpdir_path(td, "tmp"),
			     tmpdir_path(td, "final"), mono_ms() + 10000, e);
	free(layers);
	pthread_join(th, NULL);
	close(sv[1]);
	if (d.fd >= 0)
		close(d.fd);
	return rv;
}

static bool exists(struct tmpdir *td, const char *rel)
{
	struct stat st;

	return lstat(tmpdir_path(td, rel), &st) == 0;
}

static void test_image_crosses(void **state)
{
	struct tmpdir *td = *state;
	struct sender s = { .flip = -1, .tail_key = key };
	char path[PATH_MAX], cmd[PATH_MAX * 2 + 16];
	struct err e = { 0 };

	image(td, path, s.sum);
	s.path = path;
	assert_int_equal(link_run(&s, td, -1, NULL, NULL, &e), 0);
	assert_false(exists(td, "tmp"));
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", path, tmpdir_path(td, "final"));
	assert_int_equal(system(cmd), 0);
}

/* Node 0's layer record crosses with the image, as it was sent. */
static void test_record_crosses(void **state)
{
	struct tmpdir *td = *state;
	struct sender s = { .flip = -1, .tail_key = key, .layers = record };
	char path[PATH_MAX], got[sizeof(record)] = "";
	struct err e = { 0 };

	image(td, path, s.sum);
	s.path = path;
	assert_int_equal(link_run(&s, td, -1, NULL, got, &e), 0);
	assert_string_equal(got, record);
	assert_true(exists(td, "final"));
}

/* Each way a link can lie: the receiver refuses, nothing is left. */
static void test_lies_refused(void **state)
{
	struct tmpdir *td = *state;
	struct sender lies[] = {
		{ .flip = 0, .tail_key = key },            /* the first byte changed */
		{ .flip = SIZE - 1, .tail_key = key },     /* the last */
		{ .flip = -1, .tail_key = other },         /* a tail of another key */
		{ .flip = -1, .cut = true, .tail_key = key }, /* ends half way */
		/* the record's last byte changed: the image itself whole */
		{ .flip = -1, .flip_layers = true, .tail_key = key, .layers = record },
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		struct err e = { 0 };

		image(td, path, lies[i].sum);
		lies[i].path = path;
		assert_int_equal(link_run(&lies[i], td, -1, NULL, NULL, &e), -1);
		assert_false(exists(td, "tmp"));
		assert_false(exists(td, "final"));
		assert_true(e.msg[0] != '\0');
	}
}

/* Node k forwards while it receives: node k+1 gets a head, the record,
 * the bytes and a tail it can check with its own hello. */
static void test_forwarded(void **state)
{
	struct tmpdir *td = *state;
	struct sender s = { .flip = -1, .tail_key = key, .layers = record };
	static char got[SIZE];
	char *layers = NULL;
	struct feed_hello dh;
	struct feed_head hd;
	struct feed_tail t;
	struct err e = { 0 };
	char path[PATH_MAX];
	int sv[2];

	image(td, path, s.sum);
	s.path = path;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(feed_hello_make(&dh, key, "12.0", "n3", &e), 0);
	if (fork() == 0) {
		/* Node k+1 reads what comes, in its own process. */
		close(sv[0]);
		if (feed_recv(sv[1], &hd, sizeof(hd), mono_ms() + 10000) < 0 ||
		    !feed_head_ok(&hd, key, &dh) || be64toh(hd.size) != SIZE ||
		    feed_recv_layers(sv[1], &hd, &layers, mono_ms() + 10000) < 0 ||
		    strcmp(layers, record) != 0 ||
		    feed_recv(sv[1], got, SIZE, mono_ms() + 10000) < 0 ||
		    feed_recv(sv[1], &t, sizeof(t), mono_ms() + 10000) < 0 ||
		    !feed_tail_ok(&t, key, &dh, &hd, layers) ||
		    memcmp(t.sum, s.sum, FEED_SUM_LEN) != 0)
			_exit(1);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(link_run(&s, td, sv[0], &dh, NULL, &e), 0);
	{
		int status;

		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_head),
		cmocka_unit_test_setup_teardown(test_image_crosses, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_record_crosses, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_lies_refused, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_forwarded, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
