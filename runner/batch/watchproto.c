/* watchproto.c - the watch's lines, both directions (see watchproto.h). */
#include "watchproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define GREETING "CTRUN-WATCH 1 "

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int from_hex(const char *s, size_t len, uint8_t *out, size_t n)
{
	if (len != 2 * n)
		return -1;
	for (size_t i = 0; i < 2 * n; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			return -1;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(v << 4);
		else
			out[i / 2] = (uint8_t)(out[i / 2] | v);
	}
	return 0;
}

bool watchproto_host_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len >= WATCH_HOST_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

int watchproto_greeting(const uint8_t nonce[WATCH_NONCE_LEN], char *buf, size_t size)
{
	char hex[2 * WATCH_NONCE_LEN + 1];
	int len;

	to_hex(nonce, WATCH_NONCE_LEN, hex);
	len = snprintf(buf, size, GREETING "%s\n", hex);
	return len < 0 || (size_t)len >= size ? -1 : len;
}

int watchproto_parse_greeting(const char *line, uint8_t nonce[WATCH_NONCE_LEN])
{
	size_t n = strlen(GREETING);

	if (strncmp(line, GREETING, n) != 0)
		return -1;
	return from_hex(line + n, strlen(line + n), nonce, WATCH_NONCE_LEN);
}

void watchproto_mac(const uint8_t key[JOBKEY_LEN], const uint8_t nonce[WATCH_NONCE_LEN],
		    long attempt, long step, const char *host, uint8_t mac[JOBKEY_LEN])
{
	char a[24], s[24];
	const struct jobkey_part parts[] = {
		{ "ctrun-watch", sizeof("ctrun-watch") }, { nonce, WATCH_NONCE_LEN },
		{ a, (size_t)snprintf(a, sizeof(a), "%ld", attempt) + 1 },
		{ s, (size_t)snprintf(s, sizeof(s), "%ld", step) + 1 }, { host, strlen(host) },
	};

	jobkey_mac(key, parts, sizeof(parts) / sizeof(parts[0]), mac);
}

static bool why_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len >= WATCH_WHY_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

int watchproto_encode(const struct watch_msg *m, char *buf, size_t size)
{
	char hex[2 * JOBKEY_LEN + 1];
	int len = -1;

	switch (m->kind) {
	case WATCH_HELLO:
		if (!watchproto_host_ok(m->host) || m->attempt < 0 || m->step < 0)
			return -1;
		to_hex(m->mac, JOBKEY_LEN, hex);
		len = snprintf(buf, size, "H %ld %ld %s %s\n", m->attempt, m->step, m->host, hex);
		break;
	case WATCH_PROGRESS:
		if (m->rank < 0 || m->rank >= WATCH_RANK_MAX || m->ms < 0)
			return -1;
		len = snprintf(buf, size, "P %ld %lld %d\n", m->rank, m->ms, m->started ? 1 : 0);
		break;
	case WATCH_DONE:
		if (m->status < 0 || m->status > 255)
			return -1;
		len = snprintf(buf, size, "D %d\n", m->status);
		break;
	case WATCH_STOP:
		if (!why_ok(m->why))
			return -1;
		len = snprintf(buf, size, "S %s\n", m->why);
		break;
	case WATCH_NONE:
		return -1;
	}
	return len < 0 || (size_t)len >= size || len > WATCH_LINE_MAX - 1 ? -1 : len;
}

/* The next space-separated word of *p into out (at most size - 1 bytes). */
static int word(const char **p, char *out, size_t size)
{
	size_t len = strcspn(*p, " ");

	if (len == 0 || len >= size)
		return -1;
	memcpy(out, *p, len);
	out[len] = '\0';
	*p += len;
	/* One space between words, none at the end: one way to write a line. */
	if (**p == ' ' && *++*p == '\0')
		return -1;
	return 0;
}

/* A decimal number as encode writes it: digits, no sign, no leading 0. */
static int number(const char **p, long long max, long long *out)
{
	char w[24];
	long v;

	if (word(p, w, sizeof(w)) < 0 || strspn(w, "0123456789") != strlen(w) ||
	    (w[0] == '0' && w[1] != '\0') || parse_long(w, 0, (long)max, &v) < 0)
		return -1;
	*out = v;
	return 0;
}

int watchproto_parse(const char *line, struct watch_msg *m)
{
	const char *p = line + 2;
	char hex[2 * JOBKEY_LEN + 2];
	long long a, b, c;

	memset(m, 0, sizeof(*m));
	if (line[0] == '\0' || line[1] != ' ')
		return -1;
	switch (line[0]) {
	case 'H':
		if (number(&p, 1L << 30, &a) < 0 || number(&p, 1LL << 40, &b) < 0 ||
		    word(&p, m->host, sizeof(m->host)) < 0 || !watchproto_host_ok(m->host) ||
		    word(&p, hex, sizeof(hex)) < 0 || *p != '\0' ||
		    from_hex(hex, strlen(hex), m->mac, JOBKEY_LEN) < 0)
			return -1;
		m->attempt = (long)a;
		m->step = (long)b;
		break;
	case 'P':
		if (number(&p, WATCH_RANK_MAX - 1, &a) < 0 || number(&p, 1LL << 40, &b) < 0 ||
		    number(&p, 1, &c) < 0 || *p != '\0')
			return -1;
		m->rank = (long)a;
		m->ms = b;
		m->started = c == 1;
		break;
	case 'D':
		if (number(&p, 255, &a) < 0 || *p != '\0')
			return -1;
		m->status = (int)a;
		break;
	case 'S':
		if (!why_ok(p))
			return -1;
		snprintf(m->why, sizeof(m->why), "%s", p);
		break;
	default:
		return -1;
	}
	m->kind = (enum watch_kind)line[0];
	return 0;
}

int watch_reader_next(struct watch_reader *r, char *line)
{
	char *nl = memchr(r->buf, '\n', r->len);
	size_t len;

	if (nl == NULL)
		return r->len >= sizeof(r->buf) ? -1 : 0;
	len = (size_t)(nl - r->buf);
	for (size_t i = 0; i < len; i++)
		if (r->buf[i] < 0x20 || r->buf[i] > 0x7e)
			return -1;
	memcpy(line, r->buf, len);
	line[len] = '\0';
	r->len -= len + 1;
	memmove(r->buf, nl + 1, r->len);
	return 1;
}
