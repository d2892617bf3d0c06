/* http.c - GET and HEAD through libcurl (see http.h). */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"
#include "util.h"

#define ERR_BODY_MAX 4096
#define REDIRECTS_MAX 5

struct sink {
	CURL *h;
	const struct http_req *r;
	struct http_resp *out;
	bool ok;      /* 2xx: the body is the caller's */
	bool decided;
	bool failed;  /* a write to fd failed */
};

static bool is_2xx(long s)
{
	return s >= 200 && s < 300;
}

static int keep(char **buf, size_t *len, size_t max, const char *p, size_t n)
{
	char *nb;

	if (*len + n > max)
		return -1;
	nb = realloc(*buf, *len + n + 1);
	if (nb == NULL)
		return -1;
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
	return 0;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *arg)
{
	struct sink *s = arg;
	size_t n = sz * nm;
	long code = 0;

	if (!s->decided) {
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
		s->ok = is_2xx(code);
		s->decided = true;
		if (s->ok && s->r->on_start != NULL)
			s->r->on_start(s->r->arg, code);
	}
	if (!s->ok) { /* an error's text, a redirect's: kept short */
		size_t room = ERR_BODY_MAX - s->out->len;

		if (room > 0)
			keep(&s->out->body, &s->out->len, ERR_BODY_MAX, p, n < room ? n : room);
		return n;
	}
	if (s->r->on_data != NULL && s->r->on_data(s->r->arg, p, n) < 0) {
		s->out->stopped = true;
		return 0;
	}
	if (s->r->fd >= 0) {
		if (write_all(s->r->fd, p, n) < 0) {
			s->failed = true;
			return 0;
		}
	} else if (keep(&s->out->body, &s->out->len, s->r->max_body, p, n) < 0) {
		s->out->too_big = true;
		return 0;
	}
	s->out->written += (long long)n;
	return n;
}

/* One header, value trimmed, into dst (a new answer resets the fields). */
static size_t on_header(char *p, size_t sz, size_t nm, void *arg)
{
	struct http_resp *o = arg;
	size_t n = sz * nm, k;
	static const struct {
		const char *name;
		size_t off, size;
	} want[] = {
		{ "content-type", offsetof(struct http_resp, content_type), 128 },
		{ "www-authenticate", offsetof(struct http_resp, www_auth), 2048 },
		{ "docker-content-digest", offsetof(struct http_resp, digest), 80 },
		{ "retry-after", offsetof(struct http_resp, retry_after), 32 },
	};

	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		o->content_type[0] = o->www_auth[0] = o->digest[0] = o->retry_after[0] = '\0';
		return n;
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		k = strlen(want[i].name);
		if (n > k && p[k] == ':' && strncasecmp(p, want[i].name, k) == 0) {
			const char *v = p + k + 1, *end = p + n;
			char *dst = (char *)o + want[i].off;

			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && isspace((unsigned char)end[-1]))
				end--;
			/* The first challenge is enough (an oversized one is cut, then refused by its parser). */
			if (dst[0] == '\0')
				snprintf(dst, want[i].size, "%.*s", (int)(end - v), v);
		}
	}
	return n;
}

int http_origin(const char *url, char *out, size_t size)
{
	const char *h = strstr(url, "://"), *end;

	if (h == NULL)
		return -1;
	h += 3;
	end = h + strcspn(h, "/?#");
	/* userinfo@ is part of neither (never sent) */
	for (const char *at = h; at < end; at++)
		if (*at == '@')
			h = at + 1;
	if (xsnprintf(out, size, "%.*s://%.*s", (int)(strstr(url, "://") - url), url,
		      (int)(end - h), h) < 0)
		return -1;
	for (char *q = out; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	return 0;
}

static const char *host_of(const char *url, char *buf, size_t size)
{
	const char *o;

	if (http_origin(url, buf, size) < 0)
		return url;
	o = strstr(buf, "://");
	return o != NULL ? o + 3 : buf;
}

static int curl_fail(CURLcode rc, const char *url, const struct http_cfg *c, struct http_resp *o,
		     const char *detail, struct err *e)
{
	char hb[512];
	const char *host = host_of(url, hb, sizeof(hb));

	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
		o->fail = HTTP_DNS;
		return err_set(e, EXIT_CTRUN, "unknown host %s (check the reference's host, or "
			       "this node's DNS)", host);
	case CURLE_COULDNT_CONNECT:
		o->fail = HTTP_NET;
		return err_set(e, EXIT_CTRUN, "cannot connect to %s: %s", host,
			       detail[0] ? detail : "connection refused");
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
		o->fail = HTTP_TLS;
		return err_set(e, EXIT_CTRUN, "TLS with %s failed: %s (a private CA goes in "
			       "[registry] ca_file%s%s)", host, detail[0] ? detail : curl_easy_strerror(rc),
			       c->ca_file ? ", now " : "", c->ca_file ? c->ca_file : "");
	case CURLE_OPERATION_TIMEDOUT:
		o->fail = HTTP_NET;
		return err_set(e, EXIT_CTRUN, "%s stopped answering (%s)", host,
			       detail[0] ? detail : "timed out");
	default:
		o->fail = HTTP_NET;
		return err_set(e, EXIT_CTRUN, "%s: %s", host, detail[0] ? detail : curl_easy_strerror(rc));
	}
}

/* One request, no redirect followed: *next gets the Location of a 3xx. */
static int once(const struct http_cfg *c, const struct http_req *r, const char *url, bool auth,
		struct http_resp *o, char **next, struct err *e)
{
	struct curl_slist *hdr = NULL;
	char range[64], accept[512], detail[CURL_ERROR_SIZE] = "";
	struct sink s = { .r = r, .out = o };
	CURLcode rc;
	CURL *h;
	int rv = -1;

	*next = NULL;
	h = curl_easy_init();
	if (h == NULL)
		return err_set(e, EXIT_CTRUN, "libcurl: out of memory");
	s.h = h;
	if (auth && r->auth != NULL)
		hdr = curl_slist_append(hdr, r->auth);
	if (r->accept != NULL) {
		snprintf(accept, sizeof(accept), "Accept: %s", r->accept);
		hdr = curl_slist_append(hdr, accept);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "ctrun/" CTRUN_VERSION);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->stall_s > 0 ? c->stall_s : 60L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, o);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
	if (r->head)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (r->range_from > 0) {
		snprintf(range, sizeof(range), "%lld-", r->range_from);
		curl_easy_setopt(h, CURLOPT_RANGE, range);
	}
	if (c->ca_file != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->insecure_tls) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &o->status);
	if (s.failed) {
		err_sys(e, EXIT_CTRUN, "writing the download of %s", url);
		goto out;
	}
	if (o->stopped) {
		err_set(e, EXIT_CTRUN, "%s: transfer stopped", url);
		goto out;
	}
	if (o->too_big) {
		err_set(e, EXIT_CTRUN, "%s: the answer is larger than %zu bytes", url, r->max_body);
		goto out;
	}
	if (rc != CURLE_OK) {
		o->status = 0;
		curl_fail(rc, url, c, o, detail, e);
		goto out;
	}
	if (o->status >= 300 && o->status < 400 && o->status != 304) {
		char *loc = NULL;

		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
		if (loc != NULL && (*next = strdup(loc)) == NULL) {
			err_sys(e, EXIT_CTRUN, "redirect");
			goto out;
		}
	}
	rv = 0;
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return rv;
}

int http_do(const struct http_cfg *c, const struct http_req *r, struct http_resp *out,
	    struct err *e)
{
	char origin[512], here[512], *url = NULL, *next = NULL;
	bool auth = true;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	if (curl_dl_load(e) < 0)
		return -1;
	if (http_origin(r->url, origin, sizeof(origin)) < 0)
		return err_set(e, EXIT_CTRUN, "bad URL %s", r->url);
	url = strdup(r->url);
	if (url == NULL)
		return err_sys(e, EXIT_CTRUN, "URL");
	for (int hop = 0;; hop++) {
		http_resp_free(out);
		memset(out, 0, sizeof(*out));
		if (once(c, r, url, auth, out, &next, e) < 0)
			goto done;
		if (next == NULL)
			break;
		if (hop == REDIRECTS_MAX) {
			err_set(e, EXIT_CTRUN, "%s: more than %d redirects", r->url, REDIRECTS_MAX);
			goto done;
		}
		/* Credentials stay with their origin, for good. */
		if (http_origin(next, here, sizeof(here)) < 0 || strcmp(here, origin) != 0)
			auth = false;
		free(url);
		url = next;
		next = NULL;
	}
	rv = 0;
done:
	free(next);
	free(url);
	return rv;
}

void http_resp_free(struct http_resp *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}
