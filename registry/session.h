/* session.h - talking to one repository of one registry: the base URL
 * (https, or http where [registry] plain_http names the host; a mirror
 * first where one is set), credentials and tokens, retries.
 *
 * Auth: the first request goes anonymous; a 401 brings a challenge
 * (challenge.h): Basic sends the user's credentials for the host; Bearer
 * gets a token from the realm (service, scope repository:REPO:pull), with
 * Basic credentials when the user has some.  The token is reused across
 * requests (and threads) and fetched again when a request gets a 401 with
 * it (expired mid-pull).  429 and 5xx are retried after Retry-After or a
 * capped backoff (1, 2, 4, 8, 16 s), then fail with a line that says so. */
#ifndef CTRUN_SESSION_H
#define CTRUN_SESSION_H

#include <pthread.h>
#include <stdbool.h>

#include "challenge.h"
#include "creds.h"
#include "http.h"
#include "ref.h"
#include "registry.h"

struct session {
	const struct registry_cfg *cfg;
	struct image_ref ref;
	char base[1024];      /* scheme://host[:port]/v2/REPO (the mirror's when one answers) */
	char origin[600];     /* scheme://host[:port] of the registry itself */
	char host[300];       /* the host credentials are looked up for */
	struct http_cfg http;
	pthread_mutex_t lock;
	struct cred cred;     /* looked up on the first challenge */
	bool cred_looked;
	enum auth_scheme scheme;
	char auth[16384];     /* the Authorization line in use, "" = anonymous */
	unsigned gen;         /* bumped when auth changes */
	bool on_mirror;       /* base is the [registry] mirror's */
	bool unreachable;     /* the last failure: no answer (DNS, refused, timed out) */
};

int session_open(struct session *s, const struct registry_cfg *c, const struct image_ref *r,
		 struct err *e);
void session_close(struct session *s);

/* From the mirror to the registry itself: 1 switched, 0 there already. */
int session_origin(struct session *s, struct err *e);

/* GET (or HEAD) base/PATH ("manifests/latest", "blobs/sha256:...") with
 * auth and retries; r->url is set here.  Returns 0 with a 2xx in out,
 * -1 with e saying what (401/403 name the credential source, 404 names
 * REPO:TAG on HOST).  `what` names the object in errors. */
int session_get(struct session *s, const char *path, struct http_req *r, struct http_resp *out,
		const char *what, struct err *e);

#endif
