/* session.c - one repository of one registry: URLs, auth, retries (see session.h). */
#include "session.h"

#include <errno.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "curl_dl.h"
#include "manifest.h"
#include "util.h"

#define TRIES 6     /* 429 and 5xx */
#define TRIES_NET 3 /* no answer */
#define BACKOFF_MAX_S 16
#define RETRY_AFTER_MAX_S 60
#define TOKEN_MAX (8u << 10)

static bool listed(const struct strv *l, const char *host)
{
	return l != NULL && strv_find(l, host) >= 0;
}

/* scheme://host[:port] for host, per [registry] plain_http. */
static int origin_of(const struct registry_cfg *c, const char *host, char *out, size_t size)
{
	return xsnprintf(out, size, "%s://%s", listed(c->plain_http, host) ? "http" : "https",
			 host);
}

static const char *mirror_of(const struct registry_cfg *c, const char *host)
{
	size_t n = strlen(host);

	if (c->mirrors == NULL)
		return NULL;
	for (size_t i = 0; i < c->mirrors->n; i++)
		if (strncmp(c->mirrors->v[i], host, n) == 0 && c->mirrors->v[i][n] == '=')
			return c->mirrors->v[i] + n + 1;
	return NULL;
}

/* Points s at host (the registry or its mirror; prefix "" or "/path"). */
static int aim(struct session *s, const char *host, const char *prefix, struct err *e)
{
	const struct registry_cfg *c = s->cfg;

	if (xsnprintf(s->host, sizeof(s->host), "%s", host) < 0 ||
	    origin_of(c, host, s->origin, sizeof(s->origin)) < 0 ||
	    xsnprintf(s->base, sizeof(s->base), "%s/v2%s/%s", s->origin, prefix, s->ref.repo) < 0)
		return err_set(e, EXIT_USAGE, "registry host %s: too long", host);
	s->http.insecure_tls = listed(c->insecure_tls, host);
	if (s->http.insecure_tls && !c->quiet)
		fprintf(stderr, "ctrun: warning: not verifying %s's TLS certificate ([registry] "
			"insecure_tls)\n", host);
	s->cred_looked = false;
	memset(&s->cred, 0, sizeof(s->cred));
	s->auth[0] = '\0';
	s->scheme = AUTH_NONE;
	s->gen++;
	return 0;
}

int session_open(struct session *s, const struct registry_cfg *c, const struct image_ref *r,
		 struct err *e)
{
	const char *m;

	memset(s, 0, sizeof(*s));
	s->cfg = c;
	s->ref = *r;
	s->http.ca_file = c->ca_file;
	pthread_mutex_init(&s->lock, NULL);
	m = mirror_of(c, r->host);
	if (m != NULL) {
		char host[300];
		size_t n = strcspn(m, "/");

		if (n >= sizeof(host))
			return err_set(e, EXIT_USAGE, "[registry] mirror %s: host too long", m);
		memcpy(host, m, n);
		host[n] = '\0';
		if (c->verbose > 0)
			fprintf(stderr, "ctrun: %s: trying the mirror %s first\n", r->host, m);
		s->on_mirror = true;
		return aim(s, host, m + n, e);
	}
	return aim(s, ref_api_host(r), "", e);
}

int session_origin(struct session *s, struct err *e)
{
	if (!s->on_mirror)
		return 0;
	s->on_mirror = false;
	return aim(s, ref_api_host(&s->ref), "", e) < 0 ? -1 : 1;
}

void session_close(struct session *s)
{
	pthread_mutex_destroy(&s->lock);
	explicit_bzero(s->auth, sizeof(s->auth));
	explicit_bzero(&s->cred, sizeof(s->cred));
}

/* [registry] auth_file: an auth.json of the site's or the user's choice,
 * read as the other credentials files are (regular, bounded, no blocking). */
static int cred_auth_file(struct session *s, const char *host, struct err *e)
{
	const char *f = s->cfg->auth_file;
	size_t len;
	char *text;
	int r;

	if (f == NULL)
		return 0;
	text = creds_read_file(f, &len, s->cfg->quiet, e);
	if (text == NULL) {
		char why[sizeof(e->msg)];

		if (errno == ENOENT)
			return err_sys(e, EXIT_CTRUN, "[registry] auth_file %s", f);
		snprintf(why, sizeof(why), "%s", e->msg);
		return err_set(e, EXIT_CTRUN, "[registry] auth_file: %s", why);
	}
	r = creds_authjson(text, len, f, host, s->ref.repo, &s->cred, e);
	explicit_bzero(text, len);
	free(text);
	return r;
}

static void cred_lookup_host(struct session *s, const char *host0, struct err *e)
{
	const struct registry_cfg *c = s->cfg;
	/* Docker Hub's entries go by its public name. */
	const char *host = strcmp(host0, "registry-1.docker.io") == 0 ? "docker.io" : host0;
	int r = cred_auth_file(s, host, e);

	if (r == 0)
		r = creds_find(host, s->ref.repo, s->ref.user, c->envp, c->quiet, &s->cred, e);
	if (r < 0) {
		/* A broken file is said, not fatal: go on without it. */
		if (!c->quiet)
			fprintf(stderr, "ctrun: warning: %s\n", e->msg);
		memset(&s->cred, 0, sizeof(s->cred));
		memset(e, 0, sizeof(*e));
	}
	if (c->verbose > 0)
		fprintf(stderr, "ctrun: credentials for %s: %s\n", host,
			s->cred.found ? s->cred.source : "none found (anonymous)");
}

static void cred_lookup(struct session *s, struct err *e)
{
	if (s->cred_looked)
		return;
	s->cred_looked = true;
	cred_lookup_host(s, s->host, e);
}

static int basic_line(const struct cred *cr, const char *prefix, char *out, size_t size,
		      struct err *e)
{
	char plain[sizeof(cr->user) + sizeof(cr->pass) + 2];
	size_t n, len;
	int w = xsnprintf(plain, sizeof(plain), "%s:%s", cr->user, cr->pass);

	len = strlen(plain);
	n = BASE64_ENCODE_RAW_LENGTH(len);
	if (w < 0 || strlen(prefix) + n + 1 > size) {
		explicit_bzero(plain, sizeof(plain));
		return err_set(e, EXIT_USAGE, "credentials from %s: too long", cr->source);
	}
	memcpy(out, prefix, strlen(prefix) + 1);
	base64_encode_raw((char *)out + strlen(prefix), len, (const uint8_t *)plain);
	out[strlen(prefix) + n] = '\0';
	explicit_bzero(plain, sizeof(plain));
	return 0;
}

/* Pure: whether a and b ("HOST", "HOST:PORT", "[V6]:PORT") name the same
 * host, ports aside (a netrc machine entry is for every port of its host). */
static bool same_host_name(const char *a, const char *b)
{
	size_t la = a[0] == '[' ? strcspn(a, "]") + 1 : strcspn(a, ":");
	size_t lb = b[0] == '[' ? strcspn(b, "]") + 1 : strcspn(b, ":");

	return la == lb && strncasecmp(a, b, la) == 0;
}

/* A token from the challenge's realm, into s->auth. */
static int get_token(struct session *s, const struct challenge *ch, struct err *e)
{
	char url[4096], basic[16384] = "", *service = NULL, *scope = NULL;
	char scope_want[600], token[TOKEN_MAX];
	struct http_req r = { .fd = -1, .max_body = 1u << 20 };
	struct http_resp o;
	long ttl;
	int rv = -1;
	bool other_realm = false;

	if (curl_dl_load(e) < 0)
		return -1;
	/* Our own scope: the registry's may name another action. */
	snprintf(scope_want, sizeof(scope_want), "repository:%s:pull", s->ref.repo);
	service = curl_easy_escape(NULL, ch->service, 0);
	scope = curl_easy_escape(NULL, scope_want, 0);
	if (service == NULL || scope == NULL ||
	    xsnprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", ch->realm,
		      strchr(ch->realm, '?') ? "&" : "?", service, scope) < 0) {
		err_set(e, EXIT_CTRUN, "%s: token realm URL too long", s->host);
		goto out;
	}
	if (strncmp(ch->realm, "https://", 8) != 0 &&
	    !(strncmp(ch->realm, "http://", 7) == 0 && strncmp(s->origin, "http://", 7) == 0)) {
		err_set(e, EXIT_CTRUN, "%s: token realm %s is not https", s->host, ch->realm);
		goto out;
	}
	cred_lookup(s, e);
	/* enroot's .credentials may name the realm's host alone (curl --netrc
	 * matches the URL it fetches); those are sent only to a realm on the
	 * registry's own host name: a registry that names another host's token
	 * service as its realm must not receive a token of the user's there. */
	if (!s->cred.found) {
		char ro[600];
		const char *rh = http_origin(ch->realm, ro, sizeof(ro)) == 0 ? strstr(ro, "://") : NULL;

		if (rh != NULL && strcmp(rh + 3, s->host) != 0 && same_host_name(rh + 3, s->host))
			cred_lookup_host(s, rh + 3, e);
		else if (rh != NULL && !same_host_name(rh + 3, s->host))
			other_realm = true;
	}
	if (s->cred.found && basic_line(&s->cred, "Authorization: Basic ", basic, sizeof(basic), e) < 0)
		goto out;
	r.url = url;
	r.auth = basic[0] ? basic : NULL;
	if (http_do(&s->http, &r, &o, e) < 0)
		goto out;
	if (o.status == 401 || o.status == 403) {
		err_set(e, EXIT_CTRUN, "%s refused the credentials for %s (%ld): %s%s", ch->realm,
			s->host, o.status, s->cred.found ? s->cred.source :
			"none found: put them in ~/.config/containers/auth.json or enroot's .credentials",
			!s->cred.found && other_realm ? " under the registry's own host name (an entry "
			"for the token realm's host is not sent for another host's registry)" : "");
	} else if (o.status != 200) {
		err_set(e, EXIT_CTRUN, "token endpoint %s answered %ld", ch->realm, o.status);
	} else if (token_parse(o.body, o.len, token, sizeof(token), &ttl, e) == 0 &&
		   xsnprintf(s->auth, sizeof(s->auth), "Authorization: Bearer %s", token) >= 0) {
		s->scheme = AUTH_BEARER;
		s->gen++;
		rv = 0;
	}
	http_resp_free(&o);
	explicit_bzero(token, sizeof(token));
out:
	explicit_bzero(basic, sizeof(basic));
	if (service)
		curl_free(service);
	if (scope)
		curl_free(scope);
	return rv;
}

/* After a 401 answered with auth generation `gen`: new auth, unless
 * another thread renewed it since.  -1 when there is nothing to try. */
static int reauth(struct session *s, const char *www, unsigned gen, bool *tried_basic,
		  struct err *e)
{
	struct challenge ch;
	int rv = -1;

	pthread_mutex_lock(&s->lock);
	if (s->gen != gen) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (challenge_parse(www, &ch, e) < 0)
		goto out;
	if (ch.scheme == AUTH_BEARER) {
		rv = get_token(s, &ch, e);
	} else if (ch.scheme == AUTH_BASIC && !*tried_basic) {
		cred_lookup(s, e);
		*tried_basic = true;
		if (!s->cred.found)
			err_set(e, EXIT_CTRUN, "%s wants a login, and no credentials for it were "
				"found (put them in ~/.config/containers/auth.json, "
				"~/.docker/config.json or enroot's .credentials)", s->host);
		else if (basic_line(&s->cred, "Authorization: Basic ", s->auth, sizeof(s->auth),
				    e) == 0) {
			s->scheme = AUTH_BASIC;
			s->gen++;
			rv = 0;
		}
	} else if (ch.scheme == AUTH_BASIC) {
		err_set(e, EXIT_CTRUN, "%s refused the credentials from %s", s->host,
			s->cred.source);
	} else {
		err_set(e, EXIT_CTRUN, "%s asks for an authentication ctrun does not speak (%s)",
			s->host, www);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rv;
}

static long retry_wait(const struct http_resp *o, int attempt)
{
	long s = 1L << (attempt < 5 ? attempt : 4), ra;

	if (o->retry_after[0] != '\0' && parse_long(o->retry_after, 0, 86400, &ra) == 0)
		s = ra;
	if (s > RETRY_AFTER_MAX_S)
		s = RETRY_AFTER_MAX_S;
	return s < BACKOFF_MAX_S || o->retry_after[0] != '\0' ? s : BACKOFF_MAX_S;
}

static int status_error(struct session *s, const struct http_resp *o, const char *what,
			struct err *e)
{
	switch (o->status) {
	case 401:
	case 403:
		return err_set(e, EXIT_CTRUN, "%s: %s refused access (%ld) with %s", what, s->host,
			       o->status, s->cred.found ? s->cred.source
							: "no credentials (none found for it)");
	case 404:
		return err_set(e, EXIT_CTRUN, "%s: not found on %s (check the repository and tag)",
			       what, s->host);
	default:
		return err_set(e, EXIT_CTRUN, "%s: %s answered %ld%s%.200s", what, s->host, o->status,
			       o->body ? ": " : "", o->body ? o->body : "");
	}
}

int session_get(struct session *s, const char *path, struct http_req *r, struct http_resp *out,
		const char *what, struct err *e)
{
	char url[2048], auth[sizeof(s->auth)];
	bool tried_basic = false;
	int reauths = 0;

	for (int attempt = 0;; attempt++) {
		unsigned gen;

		if (xsnprintf(url, sizeof(url), "%s/%s", s->base, path) < 0)
			return err_set(e, EXIT_CTRUN, "%s: URL too long", what);
		pthread_mutex_lock(&s->lock);
		gen = s->gen;
		memcpy(auth, s->auth, sizeof(auth));
		pthread_mutex_unlock(&s->lock);
		r->url = url;
		r->auth = auth[0] ? auth : NULL;
		if (http_do(&s->http, r, out, e) < 0) {
			explicit_bzero(auth, sizeof(auth));
			/* No answer at all: twice more (1 s, 2 s), never for a name
			 * that does not resolve; a node without a route then falls
			 * back to the store soon. */
			/* A body kept in memory (a manifest, a token) starts again
			 * whole; one written to a file is the caller's to resume. */
			bool again = out->written == 0 || r->fd < 0;

			http_resp_free(out);
			if (out->fail == HTTP_NET && attempt + 1 < TRIES_NET && again) {
				sleep((unsigned)retry_wait(out, attempt));
				continue;
			}
			s->unreachable = out->written == 0 &&
					 (out->fail == HTTP_NET || out->fail == HTTP_DNS);
			return err_wrap(e, "%s", what);
		}
		explicit_bzero(auth, sizeof(auth));
		if (out->status >= 200 && out->status < 300)
			return 0;
		if (out->status == 401 && reauths < 3 && out->www_auth[0] != '\0') {
			reauths++;
			http_resp_free(out);
			if (reauth(s, out->www_auth, gen, &tried_basic, e) < 0)
				return err_wrap(e, "%s", what);
			attempt--;
			continue;
		}
		if ((out->status == 429 || out->status >= 500) && attempt + 1 < TRIES &&
		    out->written == 0) {
			long w = retry_wait(out, attempt);

			if (s->cfg->verbose > 0)
				fprintf(stderr, "ctrun: %s: %s answered %ld, retrying in %ld s\n", what,
					s->host, out->status, w);
			http_resp_free(out);
			sleep((unsigned)w);
			continue;
		}
		if (out->status == 429 || out->status >= 500) {
			err_set(e, EXIT_CTRUN, "%s: %s answered %ld %d times (%s); try again later",
				what, s->host, out->status, attempt + 1,
				out->status == 429 ? "rate limited" : "server error");
			http_resp_free(out);
			return -1;
		}
		status_error(s, out, what, e);
		http_resp_free(out);
		return -1;
	}
}
