/* Unit tests: the watch's lines (watchproto.h): what a node says reads back
 * as it was said, the hello's MAC binds nonce, attempt, step and host, and
 * anything else is refused. */
#include "ctrtest.h"

#include "watchproto.h"

static void roundtrip(const struct watch_msg *m)
{
	char line[WATCH_LINE_MAX];
	struct watch_msg back;
	int len = watchproto_encode(m, line, sizeof(line));

	assert_true(len > 0);
	assert_int_equal(line[len - 1], '\n');
	line[len - 1] = '\0';
	assert_int_equal(watchproto_parse(line, &back), 0);
	assert_int_equal(back.kind, m->kind);
	assert_int_equal(back.attempt, m->attempt);
	assert_int_equal(back.step, m->step);
	assert_string_equal(back.host, m->host);
	assert_memory_equal(back.mac, m->mac, JOBKEY_LEN);
	assert_int_equal(back.rank, m->rank);
	assert_int_equal(back.ms, m->ms);
	assert_int_equal(back.started, m->started);
	assert_int_equal(back.status, m->status);
	assert_string_equal(back.why, m->why);
}

static void test_every_message_reads_back(void **state)
{
	struct watch_msg h = { .kind = WATCH_HELLO, .attempt = 3, .step = 12, .host = "node-07.ib" };
	struct watch_msg p = { .kind = WATCH_PROGRESS, .rank = 4095, .ms = 123456789, .started = true };
	struct watch_msg q = { .kind = WATCH_PROGRESS, .rank = 0, .ms = 0 };
	struct watch_msg d = { .kind = WATCH_DONE, .status = 137 };
	struct watch_msg s = { .kind = WATCH_STOP, .why = "node n2 was lost" };

	(void)state;
	for (size_t i = 0; i < JOBKEY_LEN; i++)
		h.mac[i] = (uint8_t)(i * 7);
	roundtrip(&h);
	roundtrip(&p);
	roundtrip(&q);
	roundtrip(&d);
	roundtrip(&s);
}

static void test_greeting_carries_the_nonce(void **state)
{
	uint8_t nonce[WATCH_NONCE_LEN], back[WATCH_NONCE_LEN];
	char line[WATCH_LINE_MAX];
	int len;

	(void)state;
	for (size_t i = 0; i < sizeof(nonce); i++)
		nonce[i] = (uint8_t)(255 - i);
	len = watchproto_greeting(nonce, line, sizeof(line));
	assert_true(len > 0);
	line[len - 1] = '\0';
	assert_int_equal(watchproto_parse_greeting(line, back), 0);
	assert_memory_equal(nonce, back, sizeof(nonce));
	assert_int_equal(watchproto_parse_greeting("CTRUN-WATCH 1 00", back), -1);
	assert_int_equal(watchproto_parse_greeting("HTTP/1.1 200 OK", back), -1);
}

static void test_mac_binds_each_part(void **state)
{
	uint8_t key[JOBKEY_LEN] = { 1 }, nonce[WATCH_NONCE_LEN] = { 2 }, other[WATCH_NONCE_LEN] = { 3 };
	uint8_t a[JOBKEY_LEN], b[JOBKEY_LEN];

	(void)state;
	watchproto_mac(key, nonce, 1, 5, "n1", a);
	watchproto_mac(key, nonce, 1, 5, "n1", b);
	assert_true(jobkey_equal(a, b));
	watchproto_mac(key, other, 1, 5, "n1", b);
	assert_false(jobkey_equal(a, b));
	watchproto_mac(key, nonce, 2, 5, "n1", b);
	assert_false(jobkey_equal(a, b));
	watchproto_mac(key, nonce, 1, 6, "n1", b);
	assert_false(jobkey_equal(a, b));
	watchproto_mac(key, nonce, 1, 5, "n2", b);
	assert_false(jobkey_equal(a, b));
	/* "1" "15" and "11" "5" must differ: the parts are NUL-separated. */
	watchproto_mac(key, nonce, 11, 5, "n1", a);
	watchproto_mac(key, nonce, 1, 15, "n1", b);
	assert_false(jobkey_equal(a, b));
}

static void test_anything_else_is_refused(void **state)
{
	static const char *const bad[] = {
		"", "H", "P 1", "P 1 5", "P -1 5 1", "P 1 -5 1", "P 16777216 5 1", "P 1 5 2",
		"P 1 5 1 1", "D 256", "D x",
		"D  1", "S ", "X 1", "H 1 2 n1 zz", "H 1 2 bad/host " /* no mac */,
		"H 1 2 n\x01 0000000000000000000000000000000000000000000000000000000000000000",
		"P1 5 1",
		/* One way to write each line (found by fuzz_watchproto): no trailing
		 * space, no sign, no leading zero. */
		"D 3 ", "D 03", "D +3", "P 1 5 1 ", NULL,
	};
	struct watch_msg m;

	(void)state;
	for (size_t i = 0; bad[i] != NULL; i++)
		if (watchproto_parse(bad[i], &m) != -1)
			fail_msg("'%s' was taken", show(bad[i]));
	assert_false(watchproto_host_ok("a b"));
	assert_false(watchproto_host_ok(""));
	assert_true(watchproto_host_ok("cngn1"));
}

static void test_encode_refuses_what_no_node_sends(void **state)
{
	char line[WATCH_LINE_MAX];
	struct watch_msg h = { .kind = WATCH_HELLO, .host = "a b" };
	struct watch_msg p = { .kind = WATCH_PROGRESS, .rank = -1 };
	struct watch_msg d = { .kind = WATCH_DONE, .status = 300 };

	(void)state;
	assert_int_equal(watchproto_encode(&h, line, sizeof(line)), -1);
	assert_int_equal(watchproto_encode(&p, line, sizeof(line)), -1);
	assert_int_equal(watchproto_encode(&d, line, sizeof(line)), -1);
}

/* Lines in pieces, two at once, one too long, one with a control byte. */
static void test_reader_takes_lines_as_they_come(void **state)
{
	struct watch_reader r = { .len = 0 };
	char line[WATCH_LINE_MAX];

	(void)state;
	memcpy(r.buf, "D 0\nP 1", 7);
	r.len = 7;
	assert_int_equal(watch_reader_next(&r, line), 1);
	assert_string_equal(line, "D 0");
	assert_int_equal(watch_reader_next(&r, line), 0);
	memcpy(r.buf + r.len, " 2\n", 3);
	r.len += 3;
	assert_int_equal(watch_reader_next(&r, line), 1);
	assert_string_equal(line, "P 1 2");
	memset(r.buf, 'x', sizeof(r.buf));
	r.len = sizeof(r.buf);
	assert_int_equal(watch_reader_next(&r, line), -1);
	memcpy(r.buf, "P\x7f\n", 3);
	r.len = 3;
	assert_int_equal(watch_reader_next(&r, line), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_message_reads_back),
		cmocka_unit_test(test_greeting_carries_the_nonce),
		cmocka_unit_test(test_mac_binds_each_part),
		cmocka_unit_test(test_anything_else_is_refused),
		cmocka_unit_test(test_encode_refuses_what_no_node_sends),
		cmocka_unit_test(test_reader_takes_lines_as_they_come),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
