/* challenge.h - the registry's WWW-Authenticate challenge and the token
 * endpoint's answer (distribution's token spec).  Pure parsers, fuzzed. */
#ifndef CTRUN_CHALLENGE_H
#define CTRUN_CHALLENGE_H

#include <stddef.h>

#include "err.h"

enum auth_scheme { AUTH_NONE, AUTH_BASIC, AUTH_BEARER };

struct challenge {
	enum auth_scheme scheme;
	char realm[1024];  /* Bearer: the token endpoint URL (https://, or http:// only where the registry is plain) */
	char service[256];
	char scope[512];   /* as the registry asked, "" when it did not */
};

/* Pure: one WWW-Authenticate header value (RFC 7235: scheme, then
 * comma-separated auth-params, values quoted-string with backslash escapes
 * or token; scheme and param names case-insensitive; a token68 ignored).
 * Unknown schemes and params are ignored (no Basic or Bearer: AUTH_NONE,
 * 0); several challenges in one value: the first Bearer, else the first
 * Basic.  Errors (EXIT_CTRUN): broken syntax, a realm, service or scope
 * too long for its field, a Bearer without a realm or whose realm is not
 * an http(s) URL without blanks. */
int challenge_parse(const char *value, struct challenge *c, struct err *e);

/* Pure: the token endpoint's JSON body (len bytes, not NUL-terminated, at
 * most 1 MiB): "token" or, when it is absent or empty, "access_token" (at
 * most size-1 bytes of visible ASCII); "expires_in" into *expires_in
 * (seconds; 60 when absent, not an integer, or below 60, as the spec says). */
int token_parse(const char *body, size_t len, char *token, size_t size, long *expires_in,
		struct err *e);

#endif
