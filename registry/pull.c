/* pull.c - a reference into the image store (see registry.h).
 *
 * The manifest is resolved first (an index: the node's platform), then the
 * config and layers download in parallel (cfg->parallel threads) while this
 * thread streams each layer, in order, as soon as it is there, into one
 * squashfs (sqimage.h: the layer rules applied to a tree in memory, file
 * data compressed by one thread per CPU as it is read; no unpacked tree):
 * a pull costs about its slowest stage, not the sum.  Last the config goes
 * in, the tree is sanitized and written, and the squashfs, made under
 * tmp/, is published by rename into images/, and the tag's record is
 * written. */
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "blobs.h"
#include "claim.h"
#include "squash/layerfile.h"
#include "manifest.h"
#include "progress.h"
#include "reuse.h"
#include "rootpath.h"
#include "squash/sqimage.h"
#include "store.h"
#include "util.h"

#define PARALLEL_DEFAULT 4
#define PARALLEL_MAX 16
#define WAIT_DEFAULT_S 1800
/* Blobs downloaded ahead of the layer being applied: each holds a
 * descriptor until it is applied (RLIMIT_NOFILE is often 1024). */
#define FETCH_AHEAD 64

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

/* The download side: threads take the next blob of the list. */
struct job {
	struct session *s;
	const char *store;
	const struct descriptor *blobs; /* [0] the config, then the layers */
	size_t n, next, applied;        /* applied: blobs [0, applied) are used */
	int *fds;                       /* each blob's verified bytes (blob_fetch), -1 none */
	struct blob_live *live;         /* each blob as it downloads (layers are read so) */
	int *state;                     /* 0 waiting, 1 done, -1 failed */
	struct err first;
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct blob_meter meter;
};

static void *downloader(void *arg)
{
	struct job *j = arg;

	for (;;) {
		struct err e = { 0 };
		size_t i;
		int r;

		pthread_mutex_lock(&j->lock);
		while (!j->stop && j->next < j->n && j->next >= j->applied + FETCH_AHEAD)
			pthread_cond_wait(&j->done, &j->lock);
		if (j->stop || j->next == j->n) {
			pthread_mutex_unlock(&j->lock);
			return NULL;
		}
		i = j->next++;
		/* A blob twice in one image (an empty layer): once it is in the
		 * store, found there (two downloads would share a tmp/ name). */
		for (size_t k = 0; k < i; k++)
			while (!j->stop && j->state[k] == 0 &&
			       strcmp(j->blobs[k].digest, j->blobs[i].digest) == 0)
				pthread_cond_wait(&j->done, &j->lock);
		if (j->stop) {
			pthread_mutex_unlock(&j->lock);
			return NULL;
		}
		pthread_mutex_unlock(&j->lock);
		r = blob_fetch(j->s, j->store, &j->blobs[i], &j->meter, &j->live[i], &e);
		pthread_mutex_lock(&j->lock);
		j->fds[i] = r;
		j->state[i] = r < 0 ? -1 : 1;
		if (r < 0 && !j->stop) {
			j->first = e;
			j->stop = true;
		}
		pthread_cond_broadcast(&j->done);
		pthread_mutex_unlock(&j->lock);
	}
}

/* Waits for blob i: 0 there, -1 the pull failed. */
static int wait_blob(struct job *j, size_t i)
{
	int st;

	pthread_mutex_lock(&j->lock);
	while (j->state[i] == 0 && !j->stop)
		pthread_cond_wait(&j->done, &j->lock);
	st = j->state[i] == 1 ? 0 : -1;
	pthread_mutex_unlock(&j->lock);
	return st;
}

static void tick(struct blob_meter *m)
{
	struct progress *p = m->arg;

	if (m->done > p->done) /* a restarted download goes back: no redraw then */
		progress_add(p, m->done - p->done);
}

static bool stopped(void *arg)
{
	struct job *j = arg;
	bool v;

	pthread_mutex_lock(&j->lock);
	v = j->stop;
	pthread_mutex_unlock(&j->lock);
	return v;
}

/* A layer read as it downloads (layerfile.h's layer_source). */
struct reading {
	struct job *j;
	size_t i;
	long long off;
	unsigned gen; /* the download's restarts when its first byte was read (blobs.h) */
};

static long long read_layer(void *arg, void *buf, size_t n, struct err *e)
{
	struct reading *r = arg;
	long long got = blob_live_read(&r->j->live[r->i], r->off, buf, n, &r->gen, stopped, r->j, e);

	if (got > 0)
		r->off += got;
	return got;
}

/* Blob i is applied: its descriptor goes, and a later one may download. */
static void applied(struct job *j, size_t i)
{
	pthread_mutex_lock(&j->lock);
	close(j->fds[i]);
	j->fds[i] = -1;
	j->applied = i + 1;
	pthread_cond_broadcast(&j->done);
	pthread_mutex_unlock(&j->lock);
}

/* Downloads and streams the layers into a squashfs in a folder of its own
 * (0700: nothing another member of a group's store can reach or plant) and
 * publishes it at p->sqsh by rename.  Layers a stored image holds already
 * are taken from it (reuse_begin), not downloaded. */
static int build(struct session *s, const struct registry_cfg *c, const char *store,
		 const struct manifest *m, const struct pulled *p, struct err *e)
{
	const char *name = p->ref, *final = p->sqsh;
	struct unpack_limit lim = { .image = name, .max = c->max_unpacked, .max_tree = c->max_tree };
	struct job j = { .s = s, .store = store };
	struct descriptor *all = NULL;
	pthread_t th[PARALLEL_MAX];
	size_t nth = 0, want, k = 0;
	unsigned long made = 0;
	struct sqimage_opts opts;
	struct sqimage *img = NULL;
	unsigned *gens = NULL;
	char dir[PATH_MAX], sqsh[PATH_MAX], what[300];
	struct progress prog;
	int rv = -1, out = -1;

	if (sqimage_comp_parse(c->compression != NULL ? c->compression : SQ_COMP_PULL,
			       "[registry] compression", &opts, e) < 0 ||
	    store_tmp(store, "unpack", dir, sizeof(dir), e) < 0 ||
	    xsnprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", dir) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		err_sys(e, EXIT_CTRUN, "%s", sqsh);
		goto out;
	}
	if (sqimage_open(&img, out, &opts, e) < 0 ||
	    reuse_begin(c, store, m, name, out, &opts, &img, &lim, &k, e) < 0)
		goto out;
	j.n = m->nlayers - k + 1;
	all = calloc(j.n, sizeof(*all));
	j.fds = calloc(j.n, sizeof(int));
	j.state = calloc(j.n, sizeof(int));
	j.live = calloc(j.n, sizeof(*j.live));
	gens = calloc(j.n, sizeof(*gens));
	if (all == NULL || j.fds == NULL || j.state == NULL || j.live == NULL || gens == NULL) {
		err_sys(e, EXIT_CTRUN, "pull");
		goto out;
	}
	for (size_t i = 0; i < j.n; i++) {
		j.fds[i] = -1;
		blob_live_init(&j.live[i]);
	}
	all[0] = m->config;
	for (size_t i = k; i < m->nlayers; i++) {
		all[i - k + 1] = m->layers[i];
		j.meter.total += (unsigned long long)m->layers[i].size;
	}
	j.meter.total += (unsigned long long)m->config.size;
	j.blobs = all;
	snprintf(what, sizeof(what), "pulling %s", name);
	progress_start(&prog, c->progress, what, j.meter.total);
	pthread_mutex_init(&j.lock, NULL);
	pthread_cond_init(&j.done, NULL);
	pthread_mutex_init(&j.meter.lock, NULL);
	j.meter.tick = tick;
	j.meter.arg = &prog;
	want = (size_t)(c->parallel > 0 ? c->parallel : PARALLEL_DEFAULT);
	if (want > PARALLEL_MAX)
		want = PARALLEL_MAX;
	if (want > j.n)
		want = j.n;
	for (; nth < want; nth++)
		if (pthread_create(&th[nth], NULL, downloader, &j) != 0)
			break;
	if (nth == 0) {
		err_set(e, EXIT_CTRUN, "pull: cannot start a download thread");
		goto join;
	}
	/* The layers in order, each read as it arrives: its download, its
	 * decompression and the compression of what it holds overlap. */
	for (size_t i = 1; i < j.n; i++) {
		struct reading r = { .j = &j, .i = i };
		struct layer_source src = { read_layer, &r };
		int a = layerfile_apply_source(&src, i - 1 + k, all[i].digest, img, &lim, e);

		gens[i] = r.gen;
		if (a < 0) {
			/* Bytes the registry changed fail their decompression
			 * before their digest can be checked: the layer's
			 * download ends first, so that a mismatch (set as the
			 * download's failure) is what is said, not its effect. */
			(void)wait_blob(&j, i);
			pthread_mutex_lock(&j.lock);
			j.stop = true;
			pthread_cond_broadcast(&j.done);
			pthread_mutex_unlock(&j.lock);
			goto join;
		}
		applied(&j, i);
	}
	made = sqimage_tree(img)->made;
	if (wait_blob(&j, 0) < 0 || layerfile_config(j.fds[0], img, e) < 0)
		goto join;
	made = sqimage_tree(img)->made - made;
	rv = 0;
join:
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	/* Nothing read before its download was verified is published unless
	 * it was: every layer whole and checked, and not sent again from its
	 * start after it was read (blobs.h). */
	for (size_t i = 1; rv == 0 && i < j.n; i++)
		if (j.live[i].state != 1 || j.live[i].gen + 1 != gens[i])
			rv = err_set(e, EXIT_CTRUN, "layer %zu (%s): %s", i, all[i].digest,
				     j.live[i].state != 1 ? "its download failed"
							  : "sent again from its start after part of "
							    "it was read: pull again");
	progress_end(&prog, rv == 0);
	/* A download's failure is the cause of what it made fail. */
	if (rv < 0 && j.first.code != 0)
		*e = j.first;
	pthread_mutex_destroy(&j.lock);
	pthread_cond_destroy(&j.done);
	pthread_mutex_destroy(&j.meter.lock);
	if (rv == 0 && sqimage_finish(img, e) < 0)
		rv = -1;
	/* Readable by the members of a group's store whatever this one's umask. */
	if (rv == 0 && (fchmod(out, STORE_FILE_MODE) < 0 || rename(sqsh, final) < 0))
		rv = err_sys(e, EXIT_CTRUN, "%s", final);
	/* Its layers, for an image built on it later: only when its config
	 * made no directory (reuse.h).  Without the record it is only not
	 * reused. */
	if (rv == 0 && made == 0) {
		struct err e2 = { 0 };

		if (reuse_record_write(store, final, m, &e2) < 0 && c->verbose > 0)
			fprintf(stderr, "ctrun: %s: %s\n", name, e2.msg);
	}
out:
	sqimage_free(img);
	if (out >= 0)
		close(out);
	remove_tree(dir);
	for (size_t i = 0; j.fds != NULL && i < j.n; i++)
		if (j.fds[i] >= 0)
			close(j.fds[i]);
	for (size_t i = 0; j.live != NULL && i < j.n; i++)
		blob_live_free(&j.live[i]);
	free(all);
	free(j.fds);
	free(j.state);
	free(j.live);
	free(gens);
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
	if (build(s, c, store, img, p, e) < 0)
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
