/* Unit tests: the ctrun <-> agent messages keep the bytes of the first
 * releases, round-trip in any pieces, and a malformed, truncated or
 * overlong line decodes as BAD without harming the messages after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agentproto.h"

/* Every whole message in buf, fed n bytes at a time. */
static size_t decode_all(const char *buf, size_t len, size_t n, struct agent_msg *out,
			 size_t max)
{
	struct agentproto_reader r = { 0 };
	size_t got = 0;

	for (size_t at = 0; at < len;) {
		size_t piece = len - at < n ? len - at : n;

		for (size_t off = 0; off < piece;) {
			struct agent_msg m;

			off += agentproto_feed(&r, buf + at + off, piece - off, &m);
			if (m.kind != AGENT_MSG_NONE && got < max)
				out[got++] = m;
		}
		at += piece;
	}
	return got;
}

static void assert_encodes(struct agent_msg m, const char *wire)
{
	char buf[AGENTPROTO_MSG_MAX];

	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), strlen(wire));
	assert_memory_equal(buf, wire, strlen(wire));
}

static void test_wire_bytes_are_those_of_the_first_releases(void **state)
{
	(void)state;
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_STARTED }, "S");
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_PEER_FAILED }, "U");
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_ENDED }, "E\n");
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_FAILED, .rank = 3, .sig = 0 },
		       "F3 0\n");
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_FAILED, .rank = 12, .sig = SIGKILL },
		       "F12 9\n");
	/* --hang-timeout's report: a rank's silence in ms. */
	assert_encodes((struct agent_msg){ .kind = AGENT_MSG_PROGRESS, .rank = 7, .ms = 61000,
					   .started = true }, "P7 61000 1\n");
}

static void test_round_trip_in_every_piece_size(void **state)
{
	const struct agent_msg in[] = {
		{ .kind = AGENT_MSG_STARTED },
		{ .kind = AGENT_MSG_FAILED, .rank = 4095, .sig = SIGSEGV },
		{ .kind = AGENT_MSG_PEER_FAILED },
		{ .kind = AGENT_MSG_FAILED, .rank = 0x7fffffffffffffffL, .sig = 0 },
		{ .kind = AGENT_MSG_PROGRESS, .rank = 3, .ms = AGENTPROTO_MS_MAX },
		{ .kind = AGENT_MSG_PROGRESS, .rank = 4, .ms = 0, .started = true },
		{ .kind = AGENT_MSG_ENDED },
	};
	char wire[256];
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
		ssize_t n = agentproto_encode(&in[i], wire + len, sizeof(wire) - len);

		assert_true(n > 0);
		len += (size_t)n;
	}
	for (size_t piece = 1; piece <= len; piece++) {
		struct agent_msg out[8];

		assert_int_equal(decode_all(wire, len, piece, out, 8), 7);
		for (size_t i = 0; i < 7; i++) {
			assert_int_equal(out[i].kind, in[i].kind);
			if (in[i].kind == AGENT_MSG_FAILED || in[i].kind == AGENT_MSG_PROGRESS) {
				assert_int_equal(out[i].rank, in[i].rank);
				assert_int_equal(out[i].sig, in[i].sig);
				assert_int_equal(out[i].ms, in[i].ms);
				assert_int_equal(out[i].started, in[i].started);
			}
		}
	}
}

static void test_malformed_lines_decode_as_bad_and_the_next_one_counts(void **state)
{
	static const char *bad[] = { "F\n", "F3\n", "F3 \n", "F 9\n", "F-1 9\n", "Fx 9\n",
				     "F3 66\n", "F3 9 9\n", "F99999999999999999999 9\n",
				     "Ex\n", "Z\n", "\n", "FS 1\n", "P1\n", "P1 5\n", "P1 -5 1\n", "P-1 5 1\n",
				     "P1 1099511627777 1\n", "P1 5 2\n" };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char wire[64];
		struct agent_msg out[4];
		int n = snprintf(wire, sizeof(wire), "%sF7 0\n", bad[i]);

		assert_int_equal(decode_all(wire, (size_t)n, 1, out, 4), 2);
		assert_int_equal(out[0].kind, AGENT_MSG_BAD);
		assert_int_equal(out[1].kind, AGENT_MSG_FAILED);
		assert_int_equal(out[1].rank, 7);
	}
}

static void test_truncated_line_is_no_message_yet(void **state)
{
	struct agentproto_reader r = { 0 };
	struct agent_msg m;

	(void)state;
	assert_int_equal(agentproto_feed(&r, "F12 1", 5, &m), 5);
	assert_int_equal(m.kind, AGENT_MSG_NONE);
	assert_int_equal(agentproto_feed(&r, "5\nE\n", 4, &m), 2);
	assert_int_equal(m.kind, AGENT_MSG_FAILED);
	assert_int_equal(m.rank, 12);
	assert_int_equal(m.sig, 15);
	assert_int_equal(agentproto_feed(&r, "", 0, &m), 0);
	assert_int_equal(m.kind, AGENT_MSG_NONE);
}

/* A one-byte message inside a line is part of that line. */
static void test_one_byte_messages_only_between_lines(void **state)
{
	struct agent_msg out[4];

	(void)state;
	assert_int_equal(decode_all("FU 1\nSU", 7, 3, out, 4), 3);
	assert_int_equal(out[0].kind, AGENT_MSG_BAD);
	assert_int_equal(out[1].kind, AGENT_MSG_STARTED);
	assert_int_equal(out[2].kind, AGENT_MSG_PEER_FAILED);
}

static void test_overlong_line_is_bad_not_truncated(void **state)
{
	char wire[200];
	struct agent_msg out[4];
	size_t n;

	(void)state;
	/* The rank fits in the buffer; the padding after it does not. */
	memset(wire, ' ', sizeof(wire));
	memcpy(wire, "F1 2", 4);
	wire[AGENTPROTO_LINE_MAX + 10] = '\n';
	memcpy(wire + AGENTPROTO_LINE_MAX + 11, "S", 1);
	n = AGENTPROTO_LINE_MAX + 12;
	assert_int_equal(decode_all(wire, n, 7, out, 4), 2);
	assert_int_equal(out[0].kind, AGENT_MSG_BAD);
	assert_int_equal(out[1].kind, AGENT_MSG_STARTED);
}

static void test_encode_refuses_what_is_not_a_message(void **state)
{
	char buf[AGENTPROTO_MSG_MAX];
	struct agent_msg m = { .kind = AGENT_MSG_FAILED, .rank = -1, .sig = 0 };

	(void)state;
	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), -1);
	m = (struct agent_msg){ .kind = AGENT_MSG_FAILED, .rank = 1, .sig = NSIG + 1 };
	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), -1);
	m = (struct agent_msg){ .kind = AGENT_MSG_FAILED, .rank = 1, .sig = -2 };
	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), -1);
	m = (struct agent_msg){ .kind = AGENT_MSG_BAD };
	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), -1);
	m = (struct agent_msg){ .kind = AGENT_MSG_NONE };
	assert_int_equal(agentproto_encode(&m, buf, sizeof(buf)), -1);
	/* Bounds: the line and its NUL must fit. */
	m = (struct agent_msg){ .kind = AGENT_MSG_FAILED, .rank = 12, .sig = 9 };
	assert_int_equal(agentproto_encode(&m, buf, 6), -1);
	assert_int_equal(agentproto_encode(&m, buf, 7), 6);
	m = (struct agent_msg){ .kind = AGENT_MSG_STARTED };
	assert_int_equal(agentproto_encode(&m, buf, 1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_bytes_are_those_of_the_first_releases),
		cmocka_unit_test(test_round_trip_in_every_piece_size),
		cmocka_unit_test(test_malformed_lines_decode_as_bad_and_the_next_one_counts),
		cmocka_unit_test(test_truncated_line_is_no_message_yet),
		cmocka_unit_test(test_one_byte_messages_only_between_lines),
		cmocka_unit_test(test_overlong_line_is_bad_not_truncated),
		cmocka_unit_test(test_encode_refuses_what_is_not_a_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
