/* pull.c - a reference into the image store (see registry.h).
 *
 * The manifest is resolved first (an index: the node's platform), then,
 * unless the store holds that image or another ctrun of the step makes it,
 * its blobs are downloaded and streamed into one squashfs (assemble.h),
 * and the tag's record is written. */
#include "registry.h"

#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "assemble.h"
#include "blobs.h"
#include "claim.h"
#include "manifest.h"
#include "squash/sqimage.h"
#include "store.h"
#include "util.h"

#define WAIT_DEFAULT_S 1800

int registry_default_store(char *const *envp, char *out, size_t size, struct err *e)
{
	const char *xdg = envp_get(envp, "XDG_CACHE_HOME"), *home = envp_get(envp, "HOME");

	if (xdg != NULL && xdg[0] == '/')
		return xsnprintf(out, size, "%s/ctrun/images", xdg) < 0
			       ? err_set(e, EXIT_USAGE, "XDG_CACHE_HOME too long") : 0;
	if (home == NULL || home[0] != '/')
		return err_set(e, EXIT_USAGE, "no image store: HOME is not set (set [registry] store)");
	return xsnprintf(out, size, "%s/.cache/ctrun/images", home) < 0
		       ? err_set(e, EXIT_USAGE, "HOME too long") : 0;
}

static void sha256_hex(const void *p, size_t n, char *out /* 80 */)
{
	struct sha256_ctx h;
	uint8_t sum[SHA256_DIGEST_SIZE];

	sha256_init(&h);
	sha256_update(&h, n, p);
	sha256_digest(&h, sizeof(sum), sum);
	memcpy(out, "sha256:", 8);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", sum[i]);
}

/* GET manifests/<what>, checked against `want` when it is a digest; the
 * body's own digest into digest. */
static int get_manifest(struct session *s, const char *what, const char *want, const char *name,
			struct manifest *m, char *digest, struct err *e)
{
	struct http_req r = { .fd = -1, .max_body = MANIFEST_MAX, .accept = MANIFEST_ACCEPT };
	struct http_resp o;
	char path[200];
	int rv = -1;

	snprintf(path, sizeof(path), "manifests/%s", what);
	if (session_get(s, path, &r, &o, name, e) < 0)
		return -1;
	sha256_hex(o.body ? o.body : "", o.len, digest);
	if (want != NULL && strcmp(want, digest) != 0)
		err_set(e, EXIT_CTRUN, "%s: the registry's manifest has digest %s, not the %s asked "
			"for", name, digest, want);
	else if (manifest_parse(o.body ? o.body : "", o.len, o.content_type, name, m, e) == 0)
		rv = 0;
	http_resp_free(&o);
	return rv;
}

static void host_platform(char *arch, size_t asz, char *variant, size_t vsz)
{
	struct utsname u;

	if (uname(&u) < 0)
		snprintf(u.machine, sizeof(u.machine), "x86_64");
	platform_from_machine(u.machine, arch, asz, variant, vsz);
}

/* The image of digest in the store: 1 there (and the store and the file
 * trusted: store_image_check), 0 not, -1 refused. */
static int found(const struct registry_cfg *c, const char *store, const char *digest,
		 struct pulled *p, struct err *e)
{
	int r;

	(void)c;
	if (store_image(store, digest, p->sqsh, sizeof(p->sqsh), e) < 0)
		return -1;
	r = store_image_check(store, p->sqsh, e);
	if (r == 1)
		snprintf(p->digest, sizeof(p->digest), "%s", digest);
	return r;
}

static int store_of(const struct registry_cfg *c, char *buf, size_t size, struct err *e)
{
	if (c->store != NULL)
		return xsnprintf(buf, size, "%s", c->store) < 0
			       ? err_set(e, EXIT_USAGE, "[registry] store too long") : 0;
	return registry_default_store(c->envp, buf, size, e);
}

int registry_lookup_digest(const struct registry_cfg *c, const char *digest, struct pulled *p,
			   struct err *e)
{
	char store[PATH_MAX];

	memset(p, 0, sizeof(*p));
	if (store_of(c, store, sizeof(store), e) < 0)
		return -1;
	return found(c, store, digest, p, e);
}

/* The registry did not answer: the tag's image from an earlier pull. */
static int offline(const struct registry_cfg *c, const char *store, const struct image_ref *r,
		   struct pulled *p, struct err *why)
{
	char digest[80];
	struct err e2 = { 0 };

	if (store_ref_read(store, r, digest, sizeof(digest), &e2) != 1 ||
	    found(c, store, digest, p, &e2) != 1)
		return -1;
	p->offline = true;
	if (!c->quiet)
		fprintf(stderr, "ctrun: %s: registry not reachable (%s); using the image pulled "
			"before, %s\n", p->ref, why->msg, digest);
	return 0;
}

/* Makes the image of manifest img (digest) in the store, unless another
 * ctrun does (its claim: then this waits for the image). */
static int obtain(struct session *s, const struct registry_cfg *c, const char *store,
		  const struct manifest *img, const char *digest, struct pulled *p, struct err *e)
{
	struct claim cl;
	int f = found(c, store, digest, p, e);

	if (f != 0)
		return f < 0 ? -1 : 0;
	/* Bounded by the manifest's sizes before anything is downloaded. */
	if (blobs_budget(store, img, c->max_unpacked, p->ref, e) < 0)
		return -1;
	f = claim_take(store, digest, p->sqsh, c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S, c->quiet,
		       &cl, e);
	if (f <= 0)
		return f < 0 ? -1 : (found(c, store, digest, p, e) == 1 ? 0 : -1);
	/* Ours to pull: the step's other tasks may look now. */
	if (c->job != NULL && c->job_leader && job_record_write(store, c->job, digest, e) < 0)
		goto fail;
	if (!c->quiet && !c->progress)
		fprintf(stderr, "ctrun: pulling %s (%zu layers)\n", p->ref, img->nlayers);
	if (assemble(&(struct assembly){ .s = s, .c = c, .store = store, .m = img, .ref = p->ref,
					 .sqsh = p->sqsh },
		     e) < 0)
		goto fail;
	claim_release(&cl);
	snprintf(p->digest, sizeof(p->digest), "%s", digest);
	p->fresh = true;
	return 0;
fail:
	claim_release(&cl);
	return -1;
}

/* What resolve found. */
struct resolved {
	struct manifest m;          /* the reference's manifest */
	struct manifest pm;         /* an index's: this platform's image manifest */
	const struct manifest *img; /* the image's: &m or &pm */
	char digest[80];            /* the image manifest's digest */
	char idx_digest[80];        /* the index's, "" when the reference named an image */
};

static void resolved_free(struct resolved *v)
{
	manifest_free(&v->m);
	manifest_free(&v->pm);
}

/* The manifest of r (an index: this node's platform) and its digest, into
 * v (zeroed by the caller; resolved_free'd by it, also on failure). */
static int resolve(struct session *s, const struct registry_cfg *c, const struct image_ref *r,
		   const char *name, struct resolved *v, struct err *e)
{
	const char *what = r->digest[0] ? r->digest : r->tag, *want = r->digest[0] ? r->digest : NULL;
	char arch[32], variant[32];
	const struct descriptor *d;
	int f = get_manifest(s, what, want, name, &v->m, v->digest, e);

	if (f < 0 && s->on_mirror) {
		/* The mirror failed: the registry itself. */
		if (!c->quiet)
			fprintf(stderr, "ctrun: mirror of %s failed (%s); asking %s\n", r->host, e->msg,
				ref_api_host(r));
		manifest_free(&v->m);
		memset(&v->m, 0, sizeof(v->m));
		if (session_origin(s, e) < 0)
			return -1;
		f = get_manifest(s, what, want, name, &v->m, v->digest, e);
	}
	if (f < 0)
		return -1;
	v->img = &v->m;
	if (v->m.kind != MANIFEST_INDEX)
		return 0;
	host_platform(arch, sizeof(arch), variant, sizeof(variant));
	if (manifest_pick(&v->m, arch, variant, name, &d, e) < 0)
		return -1;
	snprintf(v->idx_digest, sizeof(v->idx_digest), "%s", v->digest);
	if (get_manifest(s, d->digest, d->digest, name, &v->pm, v->digest, e) < 0)
		return -1;
	if (v->pm.kind != MANIFEST_IMAGE)
		return err_set(e, EXIT_CTRUN, "%s: an index inside an index", name);
	v->img = &v->pm;
	return 0;
}

/* A follower of the step's task 0: its digest, from the store if there. */
static int follow(const struct registry_cfg *c, const char *store, struct image_ref *r,
		  struct pulled *p, struct err *e)
{
	char digest[80];
	struct claim cl;
	int f;

	if (job_record_wait(store, c->job, c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S,
			    c->quiet, digest, sizeof(digest), e) < 0)
		return -1;
	if (c->verbose > 0)
		fprintf(stderr, "ctrun: %s -> %s (from the step's task 0)\n", p->ref, digest);
	f = found(c, store, digest, p, e);
	if (f != 0)
		return f < 0 ? -1 : 1;
	/* Task 0 holds the claim while it pulls: wait for its image. */
	f = claim_take(store, digest, p->sqsh, c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S, c->quiet,
		       &cl, e);
	if (f < 0)
		return -1;
	if (f == 1)
		claim_release(&cl); /* it died: pull that very digest */
	else if (found(c, store, digest, p, e) == 1)
		return 1;
	snprintf(r->digest, sizeof(r->digest), "%s", digest);
	return 0;
}

int registry_pull(const struct registry_cfg *c, const char *reference, struct pulled *p,
		  struct err *e)
{
	char store[PATH_MAX];
	struct resolved v = { 0 };
	bool leader = c->job != NULL && c->job_leader;
	struct image_ref r;
	struct session s;
	struct sqimage_opts comp;
	int rv = -1, f;

	memset(p, 0, sizeof(*p));
	/* A bad compressor is the caller's setting: said before any request. */
	if (sqimage_comp_parse(c->compression != NULL ? c->compression : SQ_COMP_PULL,
			       "[registry] compression", &comp, e) < 0 ||
	    ref_parse(reference, &r, e) < 0 || store_of(c, store, sizeof(store), e) < 0)
		return -1;
	ref_format(&r, p->ref, sizeof(p->ref));
	if (store_init(store, e) < 0)
		return -1;
	if (c->job != NULL && !leader && r.digest[0] == '\0') {
		f = follow(c, store, &r, p, e);
		if (f != 0)
			return f < 0 ? -1 : 0;
	} else if (r.digest[0] != '\0') {
		/* Pinned, and here already: no network at all. */
		char chosen[80];

		f = found(c, store, r.digest, p, e);
		if (f == 0 && store_ref_read(store, &r, chosen, sizeof(chosen), e) == 1)
			f = found(c, store, chosen, p, e);
		if (f != 0)
			return f < 0 ? -1 : 0;
	}
	if (session_open(&s, c, &r, e) < 0)
		goto done;
	if (resolve(&s, c, &r, p->ref, &v, e) < 0) {
		if (s.unreachable)
			rv = offline(c, store, &r, p, e);
		goto out;
	}
	if (c->verbose > 0)
		fprintf(stderr, "ctrun: %s -> %s\n", p->ref, v.digest);
	if (store_image(store, v.digest, p->sqsh, sizeof(p->sqsh), e) < 0 ||
	    obtain(&s, c, store, v.img, v.digest, p, e) < 0)
		goto out;
	/* What the tag, or the index digest, stands for on this platform. */
	if (r.digest[0] == '\0' && store_ref_write(store, &r, r.tag, v.digest, e) < 0)
		goto out;
	if (r.digest[0] != '\0' && v.idx_digest[0] != '\0') {
		char key[80];

		snprintf(key, sizeof(key), "@sha256-%s", r.digest + 7);
		if (store_ref_write(store, &r, key, v.digest, e) < 0)
			goto out;
	}
	rv = 0;
out:
	resolved_free(&v);
	session_close(&s);
done:
	/* Task 0 tells the others what it used, or why it failed. */
	if (leader) {
		char rec[1100];
		struct err e2 = { 0 };

		snprintf(rec, sizeof(rec), "%s%s", rv == 0 ? "" : "!", rv == 0 ? p->digest : e->msg);
		job_record_write(store, c->job, rec, &e2);
		job_records_sweep(store);
	}
	return rv;
}
