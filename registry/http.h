/* http.h - one HTTP GET or HEAD through libcurl, with the rules a registry
 * client needs and nothing else:
 *   - redirects are followed here (at most 5), and the Authorization
 *     header never goes to another scheme, host or port than the one it
 *     was meant for (blob storage behind a redirect gets no credentials);
 *   - TLS is verified (a CA file may be added); unverified TLS only when
 *     the caller says so for that host;
 *   - the body of a 2xx answer goes to a file descriptor or a bounded
 *     memory buffer, and through an optional callback (hashing as it
 *     comes); the body of an error answer is kept (4 KiB) for messages;
 *   - no transfer hangs: a connection timeout, and a transfer that moves
 *     less than 1 byte/s for 60 s ends. */
#ifndef CTRUN_HTTP_H
#define CTRUN_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct http_cfg {
	const char *ca_file;  /* added to the system's CAs; NULL = none */
	bool insecure_tls;    /* no certificate verification (said by the caller) */
	long stall_s;         /* the low-speed window; 0 = 60 */
};

struct http_req {
	const char *url;
	const char *auth;     /* "Authorization: ..." header line, or NULL */
	const char *accept;   /* Accept header value, or NULL */
	bool head;
	long long range_from; /* > 0: ask for bytes from there (a resumed download) */
	int fd;               /* >= 0: a 2xx body is written here */
	size_t max_body;      /* memory body bound when fd < 0 */
	/* When a 2xx body starts (status 200 or 206: a resumed download
	 * that the server answered whole starts again), and each piece of
	 * it; on_data returning -1 ends the transfer (the caller says why). */
	void (*on_start)(void *arg, long status);
	int (*on_data)(void *arg, const void *p, size_t n);
	void *arg;
};

struct http_resp {
	long status;          /* 0 when no answer came (see the error) */
	char *body;           /* malloc'd: a 2xx body (fd < 0), or an error body; NULL-terminated */
	size_t len;
	long long written;    /* bytes of a 2xx body passed on */
	bool too_big;         /* the body passed max_body */
	bool stopped;         /* on_data ended it */
	char content_type[128];
	char www_auth[2048];  /* WWW-Authenticate */
	char digest[80];      /* Docker-Content-Digest */
	char retry_after[32];
	enum { HTTP_OK, HTTP_NET, HTTP_TLS, HTTP_DNS } fail; /* why status is 0 */
};

/* -1 only when no answer came (e names the host and why, fail says the
 * kind); any HTTP status, 4xx and 5xx included, returns 0. */
int http_do(const struct http_cfg *c, const struct http_req *r, struct http_resp *out,
	    struct err *e);

void http_resp_free(struct http_resp *r);

/* Pure: scheme://host[:port] of url into out (for the same-origin test). */
int http_origin(const char *url, char *out, size_t size);

#endif
