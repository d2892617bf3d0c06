/* fuzz_challenge.c - libFuzzer target for WWW-Authenticate values and token
 * answers (registry/challenge.c).  The bytes are both a header value (up to
 * the first NUL) and a token endpoint's body (by length).  An accepted
 * Bearer has an http(s) realm; fields end inside their buffers; a token is
 * visible ASCII that fits; expires_in is 60 s at least; errors are one
 * line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "challenge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = malloc(size + 1), *body = malloc(size > 0 ? size : 1), token[256];
	struct challenge c;
	struct err e = { 0 };
	long expires = 0;

	memcpy(value, data, size);
	value[size] = '\0';
	memcpy(body, data, size);
	if (challenge_parse(value, &c, &e) == 0) {
		if (memchr(c.realm, '\0', sizeof(c.realm)) == NULL ||
		    memchr(c.service, '\0', sizeof(c.service)) == NULL ||
		    memchr(c.scope, '\0', sizeof(c.scope)) == NULL)
			abort();
		if (c.scheme == AUTH_BEARER && strncasecmp(c.realm, "https://", 8) != 0 &&
		    strncasecmp(c.realm, "http://", 7) != 0)
			abort();
	} else if (strchr(e.msg, '\n') != NULL) {
		abort();
	}
	if (token_parse(body, size, token, sizeof(token), &expires, &e) == 0) {
		size_t n = strlen(token);

		if (n == 0 || n >= sizeof(token) || expires < 60)
			abort();
		for (size_t i = 0; i < n; i++)
			if (token[i] <= ' ' || token[i] >= 0x7f)
				abort();
	} else if (strchr(e.msg, '\n') != NULL) {
		abort();
	}
	free(value);
	free(body);
	return 0;
}
