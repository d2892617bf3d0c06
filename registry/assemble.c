/* assemble.c - a manifest's blobs into one squashfs in the store (see
 * assemble.h).
 *
 * The config and layers download in parallel (cfg->parallel threads) while
 * this thread streams each layer, in order, as soon as it is there, into
 * one squashfs (sqimage.h: the layer rules applied to a tree in memory,
 * file data compressed by one thread per CPU as it is read; no unpacked
 * tree): a pull costs about its slowest stage, not the sum.  Last the
 * config goes in, the tree is sanitized and written, and the squashfs,
 * made under tmp/, is published by rename into images/. */
#include "assemble.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blobs.h"
#include "cleanup.h"
#include "squash/layerfile.h"
#include "progress.h"
#include "reuse.h"
#include "rootpath.h"
#include "squash/sqimage.h"
#include "store.h"
#include "util.h"

#define PARALLEL_DEFAULT 4
#define PARALLEL_MAX 16
/* Blobs downloaded ahead of the layer being applied: each holds a
 * descriptor until it is applied (RLIMIT_NOFILE is often 1024). */
#define FETCH_AHEAD 64

/* The download side: threads take the next blob of the list. */
struct job {
	struct session *s;
	const char *store;
	struct descriptor *blobs;       /* [0] the config, then the layers */
	size_t n, next, applied;        /* applied: blobs [0, applied) are used */
	int *fds;                       /* each blob's verified bytes (blob_fetch), -1 none */
	struct blob_live *live;         /* each blob as it downloads (layers are read so) */
	unsigned *gens;                 /* each layer's download restarts when it was read */
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


/* The blobs of m to download: the config, then the layers from k (those
 * before are the reused image's).  -1 out of memory (errno). */
static int job_init(struct job *j, const struct manifest *m, size_t k)
{
	j->n = m->nlayers - k + 1;
	j->blobs = calloc(j->n, sizeof(*j->blobs));
	j->fds = calloc(j->n, sizeof(int));
	j->state = calloc(j->n, sizeof(int));
	j->live = calloc(j->n, sizeof(*j->live));
	j->gens = calloc(j->n, sizeof(*j->gens));
	if (j->blobs == NULL || j->fds == NULL || j->state == NULL || j->live == NULL ||
	    j->gens == NULL)
		return -1;
	for (size_t i = 0; i < j->n; i++) {
		j->fds[i] = -1;
		blob_live_init(&j->live[i]);
	}
	j->blobs[0] = m->config;
	for (size_t i = k; i < m->nlayers; i++) {
		j->blobs[i - k + 1] = m->layers[i];
		j->meter.total += (unsigned long long)m->layers[i].size;
	}
	j->meter.total += (unsigned long long)m->config.size;
	return 0;
}

static void job_free(struct job *j)
{
	for (size_t i = 0; j->fds != NULL && i < j->n; i++)
		if (j->fds[i] >= 0)
			close(j->fds[i]);
	for (size_t i = 0; j->live != NULL && i < j->n; i++)
		blob_live_free(&j->live[i]);
	free(j->blobs);
	free(j->fds);
	free(j->state);
	free(j->live);
	free(j->gens);
}

/* Up to c->parallel download threads (at most one a blob): how many run. */
static size_t start_downloads(struct job *j, const struct registry_cfg *c, pthread_t *th)
{
	size_t nth = 0, want = (size_t)(c->parallel > 0 ? c->parallel : PARALLEL_DEFAULT);

	if (want > PARALLEL_MAX)
		want = PARALLEL_MAX;
	if (want > j->n)
		want = j->n;
	for (; nth < want; nth++)
		if (pthread_create(&th[nth], NULL, downloader, j) != 0)
			break;
	return nth;
}

static void stop_downloads(struct job *j)
{
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_broadcast(&j->done);
	pthread_mutex_unlock(&j->lock);
}

/* The layers in order, each read as it arrives: its download, its
 * decompression and the compression of what it holds overlap.  k: the
 * layers img holds already. */
static int apply_layers(struct job *j, size_t k, struct sqimage *img, struct unpack_limit *lim,
			struct err *e)
{
	for (size_t i = 1; i < j->n; i++) {
		struct reading r = { .j = j, .i = i };
		struct layer_source src = { read_layer, &r };
		int a = layerfile_apply_source(&src, i - 1 + k, j->blobs[i].digest, img, lim, e);

		j->gens[i] = r.gen;
		if (a < 0) {
			/* Bytes the registry changed fail their decompression
			 * before their digest can be checked: the layer's
			 * download ends first, so that a mismatch (set as the
			 * download's failure) is what is said, not its effect. */
			(void)wait_blob(j, i);
			stop_downloads(j);
			return -1;
		}
		applied(j, i);
	}
	return 0;
}

/* Nothing read before its download was verified is published unless it
 * was: every layer whole and checked, and not sent again from its start
 * after it was read (blobs.h). */
static int all_verified(const struct job *j, struct err *e)
{
	for (size_t i = 1; i < j->n; i++)
		if (j->live[i].state != 1 || j->live[i].gen + 1 != j->gens[i])
			return err_set(e, EXIT_CTRUN, "layer %zu (%s): %s", i, j->blobs[i].digest,
				       j->live[i].state != 1 ? "its download failed"
							     : "sent again from its start after part "
							       "of it was read: pull again");
	return 0;
}

/* Downloads j's blobs and streams them into img, the config last; *made:
 * the directories the config made. */
static int run_job(struct job *j, const struct assembly *a, size_t k, struct sqimage *img,
		   struct unpack_limit *lim, unsigned long *made, struct err *e)
{
	pthread_t th[PARALLEL_MAX];
	char what[300];
	struct progress prog;
	size_t nth;
	int rv = -1;

	snprintf(what, sizeof(what), "pulling %s", a->ref);
	progress_start(&prog, a->c->progress, what, j->meter.total);
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->done, NULL);
	pthread_mutex_init(&j->meter.lock, NULL);
	j->meter.tick = tick;
	j->meter.arg = &prog;
	nth = start_downloads(j, a->c, th);
	if (nth == 0) {
		err_set(e, EXIT_CTRUN, "pull: cannot start a download thread");
	} else if (apply_layers(j, k, img, lim, e) == 0) {
		*made = sqimage_tree(img)->made;
		if (wait_blob(j, 0) == 0 && layerfile_config(j->fds[0], img, e) == 0) {
			*made = sqimage_tree(img)->made - *made;
			rv = 0;
		}
	}
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (rv == 0)
		rv = all_verified(j, e);
	progress_end(&prog, rv == 0);
	/* A download's failure is the cause of what it made fail. */
	if (rv < 0 && j->first.code != 0)
		*e = j->first;
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->done);
	pthread_mutex_destroy(&j->meter.lock);
	return rv;
}

/* img, written into out (sqsh), published at a->sqsh. */
static int publish(const struct assembly *a, struct sqimage *img, int out, const char *sqsh,
		   unsigned long made, struct err *e)
{
	if (sqimage_finish(img, e) < 0)
		return -1;
	/* Readable by the members of a group's store whatever this one's umask. */
	if (fchmod(out, STORE_FILE_MODE) < 0 || rename(sqsh, a->sqsh) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", a->sqsh);
	/* Its layers, for an image built on it later: only when its config
	 * made no directory (reuse.h).  Without the record it is only not
	 * reused. */
	if (made == 0) {
		struct err e2 = { 0 };

		if (reuse_record_write(a->store, a->sqsh, a->m, &e2) < 0 && a->c->verbose > 0)
			fprintf(stderr, "ctrun: %s: %s\n", a->ref, e2.msg);
	}
	return 0;
}

/* The image made as sqsh, a new file in a folder of its own.  Layers a
 * stored image holds already are taken from it (reuse_begin), not
 * downloaded. */
static int assemble_at(const struct assembly *a, const struct sqimage_opts *opts,
		       const char *sqsh, struct err *e)
{
	struct unpack_limit lim = { .image = a->ref, .max = a->c->max_unpacked,
				    .max_tree = a->c->max_tree };
	struct job j = { .s = a->s, .store = a->store };
	struct sqimage *img = NULL;
	unsigned long made = 0;
	size_t k = 0;
	int rv = -1;
	cleanup_close int out = open(sqsh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (out < 0)
		return err_sys(e, EXIT_CTRUN, "%s", sqsh);
	if (sqimage_open(&img, out, opts, e) < 0 ||
	    reuse_begin(a->c, a->store, a->m, a->ref, out, opts, &img, &lim, &k, e) < 0)
		goto out;
	if (job_init(&j, a->m, k) < 0) {
		err_sys(e, EXIT_CTRUN, "pull");
		goto out;
	}
	if (run_job(&j, a, k, img, &lim, &made, e) == 0)
		rv = publish(a, img, out, sqsh, made, e);
out:
	sqimage_free(img);
	job_free(&j);
	return rv;
}

int assemble(const struct assembly *a, struct err *e)
{
	struct sqimage_opts opts;
	char dir[PATH_MAX], sqsh[PATH_MAX];
	int rv;

	if (sqimage_comp_parse(a->c->compression != NULL ? a->c->compression : SQ_COMP_PULL,
			       "[registry] compression", &opts, e) < 0 ||
	    store_tmp(a->store, "unpack", dir, sizeof(dir), e) < 0 ||
	    xsnprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", dir) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", dir);
	rv = assemble_at(a, &opts, sqsh, e);
	remove_tree(dir);
	return rv;
}
