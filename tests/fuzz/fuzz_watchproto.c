/* fuzz_watchproto.c - libFuzzer target for the watch's lines
 * (runner/batch/watchproto.c), which the batch ctrun reads from whoever
 * connects to its watch, before and after they prove they belong to the
 * job: the bytes as they come in pieces (watch_reader_next), each line
 * parsed (watchproto_parse).
 *
 *   make build/fuzz/fuzz_watchproto && build/fuzz/fuzz_watchproto -max_total_time=60
 * Also checks the round trip: a line the parser accepts, encoded again,
 * is that very line (there is one way to write each message). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "watchproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct watch_reader r = { .len = 0 };
	char line[WATCH_LINE_MAX], again[WATCH_LINE_MAX + 1];
	uint8_t nonce[WATCH_NONCE_LEN];
	size_t off = 0;
	int got;

	/* In pieces of up to 7 bytes, as a socket may give them. */
	while (off < size) {
		size_t n = size - off < 7 ? size - off : 7;

		if (n > sizeof(r.buf) - r.len)
			n = sizeof(r.buf) - r.len;
		memcpy(r.buf + r.len, data + off, n);
		r.len += n;
		off += n;
		while ((got = watch_reader_next(&r, line)) > 0) {
			struct watch_msg m;
			int len;

			if (strlen(line) >= WATCH_LINE_MAX)
				abort();
			(void)watchproto_parse_greeting(line, nonce);
			if (watchproto_parse(line, &m) < 0)
				continue;
			len = watchproto_encode(&m, again, sizeof(again));
			if (len < 1 || again[len - 1] != '\n')
				abort();
			again[len - 1] = '\0';
			if (strcmp(again, line) != 0)
				abort();
		}
		if (got < 0)
			return 0; /* the watch ends such a connection */
	}
	return 0;
}
