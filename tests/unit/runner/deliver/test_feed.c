/* Unit tests of the image feed's wire (runner/deliver/feed_wire.c, feed.h): hellos
 * are taken only from holders of the job's key and only on the link they
 * were made for (its upstream node, its downstream node, its position);
 * beats, heads and tails only on their own link and beats only in order;
 * an image and node 0's layer record cross a link byte for byte; bytes of
 * the image or of the record changed on the way, a tail of another key
 * or a connection that ends early leave nothing at the temporary name nor
 * at the final one; an upstream that never acknowledges, stops its
 * keep-alives or stops sending is let go with one line saying which.
 * (The sending side, feed_serve.c: test_feed_serve.c.) */
#include "ctrtest.h"

#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <nettle/sha2.h>

#include "feed.h"
#include "rendezvous.h"

static const uint8_t key[JOBKEY_LEN] = { 1, 2, 3 };
static const uint8_t other[JOBKEY_LEN] = { 9, 9, 9 };
static const char digest[] = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char record[] = "ctrun-layers 1\n"
			     "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n";
/* Node n2's link from n1, the second node of step 12.0. */
static const struct feed_link link1 = { "12.0", "n1", "n2", 1 };

#define SIZE (3 * (1 << 20) + 12345)

static void test_hello_only_on_its_own_link(void **state)
{
	const struct feed_link others[] = {
		{ "12.1", "n1", "n2", 1 }, /* another step's */
		{ "12.0", "n2", "n3", 2 }, /* the next link down: replayed there */
		{ "12.0", "n0", "n2", 1 }, /* to another upstream node */
		{ "12.0", "n1", "n3", 1 }, /* from another downstream node */
		{ "12.0", "n1", "n2", 2 }, /* at another position */
	};
	struct feed_hello h, h2;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(feed_hello_make(&h, key, &link1, &e), 0);
	assert_true(feed_hello_ok(&h, key, &link1));
	assert_false(feed_hello_ok(&h, other, &link1));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_false(feed_hello_ok(&h, key, &others[i]));
	/* What the MAC covers: the link's names and position, rewritten to
	 * fit another link, no longer prove anything. */
	h2 = h;
	snprintf(h2.up, sizeof(h2.up), "n0");
	assert_false(feed_hello_ok(&h2, key, &others[2]));
	h2 = h;
	h2.pos = htobe32(2);
	assert_false(feed_hello_ok(&h2, key, &others[4]));
	h2 = h;
	snprintf(h2.host, sizeof(h2.host), "n3");
	assert_false(feed_hello_ok(&h2, key, &others[3]));
	h2 = h;
	memset(h2.up, 'a', sizeof(h2.up)); /* unterminated */
	assert_false(feed_hello_ok(&h2, key, &link1));
	assert_int_equal(feed_hello_make(&h2, key, &link1, &e), 0);
	assert_memory_not_equal(h.nonce, h2.nonce, FEED_NONCE_LEN);
}

static void test_beats_in_order_on_their_own_link(void **state)
{
	struct feed_hello h, h2;
	struct feed_beat b, bad;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(feed_hello_make(&h, key, &link1, &e), 0);
	assert_int_equal(feed_hello_make(&h2, key, &link1, &e), 0);
	feed_beat_make(&b, key, &h, FEED_ACK, 0);
	assert_true(feed_beat_ok(&b, key, &h, 0));
	assert_false(feed_beat_ok(&b, key, &h, 1));      /* the ack again: replayed */
	assert_false(feed_beat_ok(&b, key, &h2, 0));     /* another link's */
	assert_false(feed_beat_ok(&b, other, &h, 0));
	feed_beat_make(&b, key, &h, FEED_ALIVE, 1);
	assert_true(feed_beat_ok(&b, key, &h, 1));
	assert_false(feed_beat_ok(&b, key, &h, 2));      /* out of order */
	bad = b;
	bad.kind = htobe32(FEED_GO);                     /* the kind is MAC'd */
	assert_false(feed_beat_ok(&bad, key, &h, 1));
	feed_beat_make(&b, key, &h, FEED_GO, 2);
	assert_true(feed_beat_ok(&b, key, &h, 2));
	feed_beat_make(&b, key, &h, FEED_ALIVE, 0);      /* no ack first */
	assert_false(feed_beat_ok(&b, key, &h, 0));
	feed_beat_make(&b, key, &h, FEED_ACK, 3);        /* an ack later */
	assert_false(feed_beat_ok(&b, key, &h, 3));
	feed_beat_make(&b, key, &h, 7, 1);               /* no such kind */
	assert_false(feed_beat_ok(&b, key, &h, 1));
}

static void test_head(void **state)
{
	struct feed_hello h, h2;
	struct feed_head hd, bad;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(feed_hello_make(&h, key, &link1, &e), 0);
	assert_int_equal(feed_hello_make(&h2, key, &link1, &e), 0);
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

/* What node k-1 sends on a link, by hand: `beats` beats (the ack, then
 * keep-alives) and, unless `silent_after` (then nothing more: the link
 * stays open), GO, the head, the record (layers, "" none), the image
 * with byte `flip` changed (>= 0), or (flip_layers) its record's last
 * byte, or (cut) only half of it then nothing (hang_up: then the end of
 * the connection), and a tail MAC'd with tail_key (beats: with beat_key). */
struct sender {
	int fd;
	const char *path;
	struct feed_hello hello;
	long flip;
	bool cut, hang_up, flip_layers, silent_after;
	int beats;
	const uint8_t *tail_key, *beat_key;
	const char *layers;
	uint8_t sum[FEED_SUM_LEN];
};

static int put(int fd, const void *buf, size_t len)
{
	return sock_send_until(fd, buf, len, mono_ms() + 10000);
}

static void *send_thread(void *arg)
{
	struct sender *s = arg;
	static char buf[SIZE];
	const char *layers = s->layers != NULL ? s->layers : "";
	uint32_t n = (uint32_t)strlen(layers), seq = 0;
	char changed[sizeof(record)];
	struct feed_beat b;
	struct feed_head hd;
	struct feed_tail t;
	int fd = open(s->path, O_RDONLY);

	for (; (int)seq < s->beats; seq++) {
		feed_beat_make(&b, s->beat_key, &s->hello, seq == 0 ? FEED_ACK : FEED_ALIVE, seq);
		put(s->fd, &b, sizeof(b));
	}
	if (s->silent_after || fd < 0 || read(fd, buf, SIZE) != SIZE) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	feed_beat_make(&b, s->beat_key, &s->hello, FEED_GO, seq);
	put(s->fd, &b, sizeof(b));
	feed_head_make(&hd, key, &s->hello, 0, digest, SIZE, n, "");
	put(s->fd, &hd, sizeof(hd));
	memcpy(changed, layers, n);
	if (s->flip_layers && n > 0)
		changed[n - 1] ^= 1;
	put(s->fd, changed, n);
	if (s->flip >= 0)
		buf[s->flip] ^= 1;
	put(s->fd, buf, s->cut ? SIZE / 2 : SIZE);
	if (s->cut && s->hang_up)
		shutdown(s->fd, SHUT_WR); /* the node above went away */
	if (s->cut)
		return NULL; /* and nothing more */
	feed_tail_make(&t, s->tail_key, &s->hello, &hd, s->sum, layers);
	put(s->fd, &t, sizeof(t));
	return NULL;
}

/* One link: sender s into the receiver (silent_ms), which writes tmp and
 * publishes final; the record received into got (when not NULL:
 * sizeof(record) bytes).  The receiver's result. */
static int link_run(struct sender *s, struct tmpdir *td, int silent_ms, char *got, struct err *e)
{
	struct feed_up u = { .key = key, .silent_ms = silent_ms, .deadline = mono_ms() + 20000 };
	struct feed_head hd;
	char *layers = NULL;
	pthread_t th;
	int sv[2], rv;

	if (s->beats == 0 && !s->silent_after)
		s->beats = 2;
	if (s->beat_key == NULL)
		s->beat_key = key;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(feed_hello_make(&s->hello, key, &link1, e), 0);
	u.hello = s->hello;
	u.fd = sv[1];
	s->fd = sv[0];
	assert_int_equal(pthread_create(&th, NULL, send_thread, s), 0);
	rv = feed_wait_head(&u, &hd, e);
	if (rv == 0) {
		assert_int_equal(feed_recv_layers(&u, &hd, &layers), 0);
		if (got != NULL)
			snprintf(got, sizeof(record), "%s", layers);
		rv = feed_recv_image(&u, &hd, layers, NULL, tmpdir_path(td, "tmp"),
				     tmpdir_path(td, "final"), e);
	}
	free(layers);
	close(sv[1]); /* a sender still sending fails at once */
	pthread_join(th, NULL);
	close(sv[0]);
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
	assert_int_equal(link_run(&s, td, 10000, NULL, &e), 0);
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
	assert_int_equal(link_run(&s, td, 10000, got, &e), 0);
	assert_string_equal(got, record);
	assert_true(exists(td, "final"));
}

/* Each way a link can lie or stall: the receiver lets it go, saying
 * why, and nothing is left.  The stalls need silent_ms to pass: short
 * here (what happens, not how long, is the test). */
static void test_lies_and_stalls_refused(void **state)
{
	struct tmpdir *td = *state;
	struct {
		struct sender s;
		const char *says;
	} cases[] = {
		{ { .flip = 0, .tail_key = key }, "is not the one node 0 sent" },
		{ { .flip = SIZE - 1, .tail_key = key }, "is not the one node 0 sent" },
		{ { .flip = -1, .tail_key = other }, "is not the one node 0 sent" },
		/* the record's last byte changed: the image itself whole */
		{ { .flip = -1, .flip_layers = true, .tail_key = key, .layers = record },
		  "is not the one node 0 sent" },
		/* beats of another key: a stranger on the port */
		{ { .flip = -1, .tail_key = key, .beat_key = other },
		  "not from a node of the job (no proof of the job's key): refused" },
		/* a listener that accepts and never answers */
		{ { .flip = -1, .silent_after = true }, "no acknowledgement within" },
		/* acknowledged, a keep-alive, then silence: a ctrun that hangs */
		{ { .flip = -1, .beats = 2, .silent_after = true }, "no keep-alive within" },
		/* half the image, then silence */
		{ { .flip = -1, .cut = true, .tail_key = key }, "the image stopped coming" },
		/* half the image, then the link closes */
		{ { .flip = -1, .cut = true, .hang_up = true, .tail_key = key },
		  "the connection ended" },
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err e = { 0 };

		image(td, path, cases[i].s.sum);
		cases[i].s.path = path;
		assert_int_equal(link_run(&cases[i].s, td, 300, NULL, &e), -1);
		if (strstr(e.msg, cases[i].says) == NULL)
			fail_msg("case %zu: '%s' does not say '%s'", i, e.msg, cases[i].says);
		assert_false(exists(td, "tmp"));
		assert_false(exists(td, "final"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_only_on_its_own_link),
		cmocka_unit_test(test_beats_in_order_on_their_own_link),
		cmocka_unit_test(test_head),
		cmocka_unit_test_setup_teardown(test_image_crosses, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_record_crosses, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_lies_and_stalls_refused, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
