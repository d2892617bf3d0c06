/* Unit tests of a node's link to the node below in the image feed
 * (runner/deliver/feed_serve.c), on real sockets of 127.0.0.1: the node below is
 * acknowledged at once and kept alive while the image is not there; it
 * gets the image, the record and a tail it can check, from node 0's file
 * or forwarded by node k as node k receives (also when it comes late);
 * a crowd of strangers' connections (silent, garbage, half a hello) does
 * not keep it out, and they are all closed; a hello made for another link
 * is dropped without a byte; one that stops reading is dropped and the
 * node goes on; when this node fails, the link closes at once. */
#include "ctrtest.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "feed.h"
#include "feed_serve.h"
#include "rendezvous.h"

static const uint8_t key[JOBKEY_LEN] = { 4, 5, 6 };
static const char digest[] = "sha256:ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
static const char record[] = "ctrun-layers 1\n"
			     "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n";
/* Step 12.0 on n1 n2 n3: the link n1 -> n2 and the link n2 -> n3. */
static const struct feed_link link1 = { "12.0", "n1", "n2", 1 };
static const struct feed_link link2 = { "12.0", "n2", "n3", 2 };

#define SIZE (5 * (1 << 20) + 777)
#define BOUND_MS 20000 /* the harness's guard against a hang, not a timing */

/* A listening socket on 127.0.0.1 (non-blocking, as the feed's). */
static int listener(long *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4096), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A connection to it; rcvbuf > 0: that small a receive buffer. */
static int dial(long port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (rcvbuf > 0)
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static struct feed_serve *serve(int lfd, const struct feed_link *l, int silent_ms)
{
	struct err e = { 0 };
	struct feed_serve *s = feed_serve_start(lfd, key, l, silent_ms, mono_ms() + BOUND_MS, &e);

	assert_non_null(s);
	return s;
}

/* The node below's side: connects, says its hello for link l. */
static struct feed_up below(long port, const struct feed_link *l, int rcvbuf)
{
	struct feed_up u = { .key = key, .silent_ms = 10000, .deadline = mono_ms() + BOUND_MS };
	struct err e = { 0 };

	u.fd = dial(port, rcvbuf);
	assert_int_equal(feed_hello_make(&u.hello, key, l, &e), 0);
	assert_int_equal(sock_send_until(u.fd, &u.hello, sizeof(u.hello), mono_ms() + BOUND_MS), 0);
	return u;
}

static void expect_beat(const struct feed_up *u, uint32_t kind, uint32_t seq)
{
	struct feed_beat b;

	assert_int_equal(rdzv_recv_until(u->fd, &b, sizeof(b), (long)(mono_ms() + BOUND_MS)), 0);
	assert_true(feed_beat_ok(&b, key, &u->hello, seq));
	assert_int_equal(be32toh(b.kind), kind);
}

/* Whether the other side closed fd without sending a byte. */
static bool closed_silently(int fd)
{
	char c;

	return rdzv_recv_until(fd, &c, 1, (long)(mono_ms() + BOUND_MS)) < 0 && errno == ECONNRESET;
}

/* SIZE bytes of a pattern at rel, open for reading. */
static int image(struct tmpdir *td, const char *rel)
{
	static char buf[SIZE];
	int fd;

	for (size_t i = 0; i < SIZE; i++)
		buf[i] = (char)(i % 251 + i / 65536);
	fd = open(tmpdir_path(td, rel), O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, buf, SIZE), 0);
	return fd;
}

static bool same(struct tmpdir *td, const char *a, const char *b)
{
	char cmd[PATH_MAX * 2 + 16];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", tmpdir_path(td, a), tmpdir_path(td, b));
	return system(cmd) == 0;
}

/* Node 0 hands its whole file and record to s. */
static void node0_has(struct feed_serve *s, int fd)
{
	feed_serve_head(s, 0, digest, SIZE, record, (uint32_t)strlen(record), "", fd);
	feed_serve_more(s, SIZE);
	feed_serve_verified(s, NULL);
}

/* The node below receives the image of link u into tmp and final (full
 * paths: tmpdir_path's are not a thread's own); its record into got
 * (sizeof(record) bytes). */
static int take(const struct feed_up *u, const char *tmp, const char *final, char *got)
{
	struct err e = { 0 };
	struct feed_head hd;
	char *layers = NULL;
	int rv = -1;

	if (feed_wait_head(u, &hd, &e) == 0 && feed_recv_layers(u, &hd, &layers) == 0) {
		snprintf(got, sizeof(record), "%s", layers);
		rv = feed_recv_image(u, &hd, layers, NULL, tmp, final, &e);
	}
	if (rv < 0)
		fprintf(stderr, "take: %s\n", e.msg);
	free(layers);
	return rv;
}

static void test_node0_file_crosses_with_its_record(void **state)
{
	struct tmpdir *td = *state;
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 10000);
	struct feed_up u = below(port, &link1, 0);
	char got[sizeof(record)] = "";
	int fd = image(td, "image");

	node0_has(s, fd);
	close(fd);
	assert_int_equal(take(&u, tmpdir_path(td, "tmp"), tmpdir_path(td, "final"), got), 0);
	assert_int_equal(feed_serve_end(s, NULL, 0), FEED_SERVED);
	assert_string_equal(got, record);
	assert_true(same(td, "image", "final"));
	close(u.fd);
}

/* Node 0's pull failed: its reason is what the node below gets. */
static void test_node0_error_crosses(void **state)
{
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 10000);
	struct feed_up u = below(port, &link1, 0);
	struct feed_head hd;
	struct err e = { 0 };

	(void)state;
	feed_serve_head(s, 1, "", 0, NULL, 0, "no such tag", -1);
	feed_serve_verified(s, NULL);
	assert_int_equal(feed_wait_head(&u, &hd, &e), 0);
	assert_int_equal(be32toh(hd.status), 1);
	assert_string_equal(hd.msg, "no such tag");
	assert_int_equal(feed_serve_end(s, NULL, 0), FEED_SERVED);
	close(u.fd);
}

/* While node 0 pulls: the ack at once, then keep-alives (every
 * silent_ms / 10), then GO and the image. */
static void test_kept_alive_until_the_image_is_there(void **state)
{
	struct tmpdir *td = *state;
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 1000);
	struct feed_up u = below(port, &link1, 0);
	struct feed_beat b;
	struct feed_head hd;
	struct err e = { 0 };
	uint32_t seq = 3;
	int fd = image(td, "image");

	expect_beat(&u, FEED_ACK, 0);
	expect_beat(&u, FEED_ALIVE, 1);
	expect_beat(&u, FEED_ALIVE, 2);
	node0_has(s, fd);
	close(fd);
	/* More keep-alives may have gone meanwhile: in order, then GO. */
	do {
		assert_int_equal(rdzv_recv_until(u.fd, &b, sizeof(b), (long)(mono_ms() + BOUND_MS)), 0);
		assert_true(feed_beat_ok(&b, key, &u.hello, seq++));
	} while (be32toh(b.kind) == FEED_ALIVE);
	assert_int_equal(be32toh(b.kind), FEED_GO);
	assert_int_equal(rdzv_recv_until(u.fd, &hd, sizeof(hd), (long)(mono_ms() + BOUND_MS)), 0);
	assert_true(feed_head_ok(&hd, key, &u.hello));
	{
		char *layers = NULL;

		assert_int_equal(feed_recv_layers(&u, &hd, &layers), 0);
		assert_int_equal(feed_recv_image(&u, &hd, layers, NULL, tmpdir_path(td, "tmp"),
						 tmpdir_path(td, "final"), &e), 0);
		free(layers);
	}
	assert_int_equal(feed_serve_end(s, NULL, 0), FEED_SERVED);
	assert_true(same(td, "image", "final"));
	close(u.fd);
}

/* Another user's connections on the port (issue 41, point 5): before,
 * each had 5 s of the node's one-at-a-time accept, and a dozen used up
 * its window. */
static void test_strangers_keep_the_node_below_out_no_more(void **state)
{
	enum { SILENT = 100, GARBAGE = 20, HALF = 20, ALL = SILENT + GARBAGE + HALF };
	long port;
	int lfd = listener(&port), strangers[ALL];
	struct feed_serve *s = serve(lfd, &link1, 10000);
	struct feed_up u;
	char junk[300];

	(void)state;
	memset(junk, 'x', sizeof(junk));
	for (int i = 0; i < ALL; i++) {
		strangers[i] = dial(port, 0);
		if (i >= SILENT + GARBAGE)
			assert_int_equal(write_all(strangers[i], FEED_MAGIC, 8), 0);
		else if (i >= SILENT)
			assert_int_equal(write_all(strangers[i], junk, sizeof(junk)), 0);
	}
	u = below(port, &link1, 0);
	expect_beat(&u, FEED_ACK, 0);
	/* The node below is in: every stranger's connection is closed. */
	for (int i = 0; i < ALL; i++) {
		if (!closed_silently(strangers[i]))
			fail_msg("stranger %d: not closed (%s)", i, strerror(errno));
		close(strangers[i]);
	}
	assert_int_not_equal(feed_serve_end(s, NULL, 0), FEED_SERVED);
	assert_true(closed_silently(u.fd));
	close(u.fd);
}

/* Hellos of the job's key made for other links (issue 41, point 6): a
 * node further down the chain, another upstream node, another position.
 * Before, any hello of the key was taken on any link. */
static void test_a_hello_for_another_link_is_dropped(void **state)
{
	const struct feed_link others[] = {
		link2,                         /* the next link's, replayed here */
		{ "12.0", "n0", "n2", 1 },     /* for another upstream node */
		{ "12.0", "n1", "n3", 1 },     /* from another downstream node */
		{ "12.0", "n1", "n2", 2 },     /* at another position */
	};
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 10000);
	struct feed_up u;

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		u = below(port, &others[i], 0);
		if (!closed_silently(u.fd))
			fail_msg("the hello for link %zu was not dropped", i);
		close(u.fd);
	}
	u = below(port, &link1, 0);
	expect_beat(&u, FEED_ACK, 0);
	feed_serve_end(s, NULL, 0);
	close(u.fd);
}

/* A node below that stops reading (issue 41, point 6): dropped once
 * it took nothing for silent_ms, and this node's part ends; before,
 * node 0's blocking send held it, and the whole step, for ever. */
static void test_a_node_below_that_stops_reading_is_dropped(void **state)
{
	struct tmpdir *td = *state;
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 300);
	struct feed_up u = below(port, &link1, 4096);
	char why[200];
	int fd = image(td, "image");

	/* Larger than any socket buffer: 64 MiB, most of it a hole. */
	assert_int_equal(ftruncate(fd, 64 << 20), 0);
	expect_beat(&u, FEED_ACK, 0);
	feed_serve_head(s, 0, digest, 64 << 20, "", 0, "", fd);
	feed_serve_more(s, 64 << 20);
	feed_serve_verified(s, NULL);
	close(fd);
	assert_int_equal(feed_serve_end(s, why, sizeof(why)), FEED_STALLED);
	if (strstr(why, "stopped reading") == NULL)
		fail_msg("why: '%s'", why);
	{
		/* Reset: the node below learns it without reading the rest. */
		struct pollfd p = { .fd = u.fd, .events = POLLRDHUP };

		assert_int_equal(poll(&p, 1, BOUND_MS), 1);
		assert_true(p.revents & (POLLHUP | POLLERR));
	}
	close(u.fd);
}

/* This node failed before its image came: the link closes at once,
 * and the node below pulls for itself. */
static void test_this_node_failing_closes_the_link(void **state)
{
	long port;
	struct feed_serve *s = serve(listener(&port), &link1, 10000);
	struct feed_up u = below(port, &link1, 0);

	(void)state;
	expect_beat(&u, FEED_ACK, 0);
	assert_int_not_equal(feed_serve_end(s, NULL, 0), FEED_SERVED);
	assert_true(closed_silently(u.fd));
	close(u.fd);
}

/* Node n3, below n2, in a thread of its own. */
struct node3 {
	pthread_t th;
	long port;
	char tmp[PATH_MAX], final[PATH_MAX];
	char got[sizeof(record)];
	int rv;
};

static void *node3_run(void *arg)
{
	struct node3 *n = arg;
	struct feed_up u = below(n->port, &link2, 0);

	n->rv = take(&u, n->tmp, n->final, n->got);
	close(u.fd);
	return NULL;
}

/* n1 (node 0) -> n2 -> n3: n2 writes what it receives and n3 gets it
 * from n2's file as it grows, or (late) after n2 has it all. */
static void chain(struct tmpdir *td, bool late)
{
	long port1, port2;
	struct feed_serve *s1 = serve(listener(&port1), &link1, 10000);
	struct feed_serve *s2 = serve(listener(&port2), &link2, 10000);
	struct feed_up u = below(port1, &link1, 0);
	struct node3 n3 = { .port = port2, .rv = -2 };
	struct feed_head hd;
	struct err e = { 0 };
	char *layers = NULL, tmp2[PATH_MAX], final2[PATH_MAX];
	int fd = image(td, "image");

	snprintf(n3.tmp, sizeof(n3.tmp), "%s", tmpdir_path(td, "tmp3"));
	snprintf(n3.final, sizeof(n3.final), "%s", tmpdir_path(td, "final3"));
	snprintf(tmp2, sizeof(tmp2), "%s", tmpdir_path(td, "tmp2"));
	snprintf(final2, sizeof(final2), "%s", tmpdir_path(td, "final2"));

	node0_has(s1, fd);
	close(fd);
	if (!late)
		assert_int_equal(pthread_create(&n3.th, NULL, node3_run, &n3), 0);
	assert_int_equal(feed_wait_head(&u, &hd, &e), 0);
	assert_int_equal(feed_recv_layers(&u, &hd, &layers), 0);
	assert_int_equal(feed_recv_image(&u, &hd, layers, s2, tmp2, final2, &e), 0);
	if (late)
		assert_int_equal(pthread_create(&n3.th, NULL, node3_run, &n3), 0);
	assert_int_equal(feed_serve_end(s2, NULL, 0), FEED_SERVED);
	assert_int_equal(feed_serve_end(s1, NULL, 0), FEED_SERVED);
	pthread_join(n3.th, NULL); /* before tmpdir_path is called again */
	assert_int_equal(n3.rv, 0);
	assert_string_equal(n3.got, record);
	assert_true(same(td, "image", "final2"));
	assert_true(same(td, "image", "final3"));
	free(layers);
	close(u.fd);
}

static void test_node_k_forwards_as_it_receives(void **state)
{
	chain(*state, false);
}

static void test_a_late_node_below_gets_all(void **state)
{
	chain(*state, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node0_file_crosses_with_its_record, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_node0_error_crosses),
		cmocka_unit_test_setup_teardown(test_kept_alive_until_the_image_is_there, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_strangers_keep_the_node_below_out_no_more),
		cmocka_unit_test(test_a_hello_for_another_link_is_dropped),
		cmocka_unit_test_setup_teardown(test_a_node_below_that_stops_reading_is_dropped,
						tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test(test_this_node_failing_closes_the_link),
		cmocka_unit_test_setup_teardown(test_node_k_forwards_as_it_receives, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_a_late_node_below_gets_all, tmpdir_setup,
						tmpdir_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
