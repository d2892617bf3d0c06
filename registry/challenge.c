/* challenge.c - WWW-Authenticate values (RFC 7235) and the token endpoint's
 * answer (distribution's token spec) (see challenge.h).
 *
 *   challenge  = scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 *
 * Several challenges may share one value, separated by commas like the
 * params: a token not followed by '=' after a comma starts the next one. */
#include "challenge.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "jsonbody.h"

#define TOKEN_BODY_MAX (1u << 20)
#define TOKEN_EXPIRES_MIN 60 /* the spec's default and floor */

#define TCHAR                                                                         \
	"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define T68CHAR "-._~+/0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

struct cursor {
	const char *value; /* the whole header value, for messages */
	const char *p;
	struct err *e;
};

static int bad(struct cursor *c, const char *why)
{
	return err_set(c->e, EXIT_CTRUN, "WWW-Authenticate '%.200s': %s at offset %zu", c->value,
		       why, (size_t)(c->p - c->value));
}

static const char *skip_ws(const char *p)
{
	return p + strspn(p, " \t");
}

/* One param value at c->p (token or quoted-string) into out[size] when out
 * is not NULL; *len gets its full unescaped length.  Moves c->p past it. */
static int param_value(struct cursor *c, char *out, size_t size, size_t *len)
{
	const char *p = c->p;

	*len = 0;
	if (*p != '"') {
		size_t n = strspn(p, TCHAR);

		if (n == 0)
			return bad(c, "expected a value after '='");
		if (out != NULL && n < size) {
			memcpy(out, p, n);
			out[n] = '\0';
		}
		*len = n;
		c->p = p + n;
		return 0;
	}
	for (p++; *p != '"'; p++) {
		unsigned char ch;

		if (*p == '\\')
			p++;
		ch = (unsigned char)*p;
		if (ch == '\0' || (ch < 0x20 && ch != '\t') || ch == 0x7f) {
			c->p = p;
			return bad(c, ch == '\0' ? "unterminated quoted string"
						 : "control character in a quoted string");
		}
		if (out != NULL && *len + 1 < size) {
			out[*len] = (char)ch;
			out[*len + 1] = '\0';
		}
		(*len)++;
	}
	c->p = p + 1;
	return 0;
}

/* The field of challenge ch that param `name` (len n) fills, or NULL. */
static char *field(struct challenge *ch, const char *name, size_t n, size_t *size)
{
	static const struct {
		const char *name;
		size_t off, size;
	} fields[] = {
		{ "realm", offsetof(struct challenge, realm), sizeof(((struct challenge *)0)->realm) },
		{ "service", offsetof(struct challenge, service),
		  sizeof(((struct challenge *)0)->service) },
		{ "scope", offsetof(struct challenge, scope), sizeof(((struct challenge *)0)->scope) },
	};

	if (ch->scheme == AUTH_NONE)
		return NULL;
	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++) {
		if (n == strlen(fields[i].name) && strncasecmp(name, fields[i].name, n) == 0) {
			*size = fields[i].size;
			return (char *)ch + fields[i].off;
		}
	}
	return NULL;
}

/* The params of one challenge, c->p just after its scheme; stops at the
 * end or at the scheme of the next challenge. */
static int params(struct cursor *c, struct challenge *ch)
{
	const char *p = skip_ws(c->p);
	size_t n = strspn(p, T68CHAR), pad = strspn(p + n, "=");
	bool first = true;

	/* token68 (Basic's or Negotiate's credentials blob): ignored. */
	if (n > 0 && (*skip_ws(p + n + pad) == ',' || *skip_ws(p + n + pad) == '\0')) {
		c->p = skip_ws(p + n + pad);
		return 0;
	}
	for (;;) {
		const char *name;
		char *dst;
		size_t size = 0, len;

		p = first ? skip_ws(p) : p + strspn(p, " \t,");
		c->p = p;
		n = strspn(p, TCHAR);
		if (n == 0) {
			if (*p == '\0' || (first && *p == ','))
				return 0;
			return bad(c, "expected NAME=VALUE");
		}
		name = p;
		p = skip_ws(p + n);
		if (*p != '=') {
			if (first)
				return bad(c, "expected NAME=VALUE");
			return 0; /* the next challenge's scheme */
		}
		c->p = skip_ws(p + 1);
		dst = field(ch, name, n, &size);
		/* Each param once; should one repeat, the first stands. */
		if (dst != NULL && dst[0] != '\0')
			dst = NULL;
		if (param_value(c, dst, size, &len) < 0)
			return -1;
		if (dst != NULL && len >= size) {
			dst[0] = '\0';
			return bad(c, "a value is too long");
		}
		p = skip_ws(c->p);
		if (*p != ',' && *p != '\0') {
			c->p = p;
			return bad(c, "expected ',' between params");
		}
		first = false;
	}
}

/* A realm is an http(s) URL the caller will add a query to: no blanks. */
static bool realm_ok(const char *realm)
{
	for (const unsigned char *p = (const unsigned char *)realm; *p != '\0'; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return strncasecmp(realm, "https://", 8) == 0 || strncasecmp(realm, "http://", 7) == 0;
}

int challenge_parse(const char *value, struct challenge *out, struct err *e)
{
	struct cursor c = { value, value, e };
	struct challenge ch, basic = { 0 };

	memset(out, 0, sizeof(*out));
	for (;;) {
		size_t n;

		c.p += strspn(c.p, " \t,");
		if (*c.p == '\0')
			break;
		n = strspn(c.p, TCHAR);
		if (n == 0)
			return bad(&c, "expected an auth scheme");
		memset(&ch, 0, sizeof(ch));
		if (n == 6 && strncasecmp(c.p, "Bearer", 6) == 0)
			ch.scheme = AUTH_BEARER;
		else if (n == 5 && strncasecmp(c.p, "Basic", 5) == 0)
			ch.scheme = AUTH_BASIC;
		c.p += n;
		if (params(&c, &ch) < 0)
			return -1;
		if (ch.scheme == AUTH_BEARER) {
			if (ch.realm[0] == '\0')
				return err_set(e, EXIT_CTRUN, "WWW-Authenticate '%.200s': a Bearer "
					       "challenge without a realm", value);
			if (!realm_ok(ch.realm))
				return err_set(e, EXIT_CTRUN, "WWW-Authenticate '%.200s': the realm "
					       "is not an http(s) URL", value);
			*out = ch;
			return 0;
		}
		if (ch.scheme == AUTH_BASIC && basic.scheme == AUTH_NONE)
			basic = ch;
	}
	*out = basic;
	return 0;
}

int token_parse(const char *body, size_t len, char *token, size_t size, long *expires_in,
		struct err *e)
{
	static const char what[] = "the token endpoint's answer";
	json_object *o = jsonbody_parse(body, len, TOKEN_BODY_MAX, EXIT_CTRUN, what, e), *t, *x;
	const char *s;
	size_t n;
	int rv = -1;

	if (o == NULL)
		return -1;
	t = jsonbody_get(o, "token", json_type_string);
	if (t == NULL || json_object_get_string_len(t) == 0)
		t = jsonbody_get(o, "access_token", json_type_string);
	if (t == NULL || json_object_get_string_len(t) == 0) {
		err_set(e, EXIT_CTRUN, "%s has no token", what);
		goto out;
	}
	s = json_object_get_string(t);
	n = (size_t)json_object_get_string_len(t);
	for (size_t i = 0; i < n; i++) {
		if (s[i] <= ' ' || s[i] >= 0x7f) {
			err_set(e, EXIT_CTRUN, "%s: the token holds a byte that is not visible ASCII",
				what);
			goto out;
		}
	}
	if (n >= size) {
		err_set(e, EXIT_CTRUN, "%s: the token is longer than %zu bytes", what,
			size > 0 ? size - 1 : 0);
		goto out;
	}
	memcpy(token, s, n + 1);
	*expires_in = TOKEN_EXPIRES_MIN;
	x = jsonbody_get(o, "expires_in", json_type_int);
	if (x != NULL && json_object_get_int64(x) > TOKEN_EXPIRES_MIN)
		*expires_in = json_object_get_int64(x) > LONG_MAX ? LONG_MAX
								  : (long)json_object_get_int64(x);
	rv = 0;
out:
	json_object_put(o);
	return rv;
}
