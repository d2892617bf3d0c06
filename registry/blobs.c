/* blobs.c - a blob downloaded, resumed and verified (see blobs.h).
 *
 * In a group's store every member can rename, replace or plant files in
 * blobs/ and tmp/, and the owner of a file can rewrite it in place.  So
 * nothing found there is used for what its name says: a blob in the store
 * is hashed before it is handed out, a partial download is only read (its
 * bytes hashed with the rest), every file written is a new one of ours
 * (O_EXCL), and what is handed out is a descriptor of a file no one else
 * can change, never a path someone could swap meanwhile. */
#include "blobs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "unpack/archive_filter.h"
#include "squash/layerfile.h"
#include "store.h"
#include "util.h"

#define RESUMES_MAX 5

struct dl {
	struct sha256_ctx h;
	int fd;
	long long have, want;
	struct blob_meter *m;
	struct blob_live *live; /* NULL: nobody reads it before it is whole */
	bool over;
};

/* ---- a blob read as it downloads ------------------------------------------ */

void blob_live_init(struct blob_live *b)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->more, NULL);
}

void blob_live_free(struct blob_live *b)
{
	if (b->fd >= 0)
		close(b->fd);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->more);
}

/* Publishes: avail (>= 0), state (unless 0), a restart (gen). */
static void live_set(struct blob_live *b, long long avail, int state, bool restarted)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	if (restarted)
		b->gen++;
	if (avail >= 0)
		b->avail = avail;
	if (state != 0)
		b->state = state;
	pthread_cond_broadcast(&b->more);
	pthread_mutex_unlock(&b->lock);
}

/* The reader's own descriptor of fd's file, once (the download's may close first). */
static void live_start(struct blob_live *b, int fd, long long avail)
{
	int dup_fd;

	if (b == NULL)
		return;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_lock(&b->lock);
	if (b->fd < 0)
		b->fd = dup_fd;
	else if (dup_fd >= 0)
		close(dup_fd);
	b->avail = avail;
	pthread_cond_broadcast(&b->more);
	pthread_mutex_unlock(&b->lock);
}

long long blob_live_read(struct blob_live *b, long long off, void *buf, size_t n, unsigned *gen,
			 bool (*stop)(void *arg), void *arg, struct err *e)
{
	for (;;) {
		long long k;
		ssize_t got;
		int fd;

		pthread_mutex_lock(&b->lock);
		while (b->state == 0 && b->avail <= off && !(stop != NULL && stop(arg))) {
			struct timespec t;

			/* Woken by each piece; the deadline looks at stop(). */
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 100000000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&b->more, &b->lock, &t);
		}
		if (*gen == 0)
			*gen = b->gen + 1;
		if (b->gen + 1 != *gen || b->state < 0 || (stop != NULL && stop(arg))) {
			bool restarted = b->gen + 1 != *gen;

			pthread_mutex_unlock(&b->lock);
			return err_set(e, EXIT_CTRUN, "%s", restarted
				       ? "the registry sent the blob again from its start after part of "
					 "it was read: pull again"
				       : "its download failed");
		}
		if (b->avail <= off) { /* state 1: all of it read */
			pthread_mutex_unlock(&b->lock);
			return 0;
		}
		k = b->avail - off;
		fd = b->fd;
		pthread_mutex_unlock(&b->lock);
		if ((unsigned long long)k > n)
			k = (long long)n;
		got = pread(fd, buf, (size_t)k, (off_t)off);
		if (got < 0)
			return err_sys(e, EXIT_CTRUN, "reading the download");
		if (got > 0)
			return got;
		/* Cut under us by a restart: the next round says so. */
	}
}

static void meter_add(struct blob_meter *m, long long n)
{
	if (m == NULL || n == 0)
		return;
	pthread_mutex_lock(&m->lock);
	m->done = (unsigned long long)((long long)m->done + n);
	if (m->tick != NULL)
		m->tick(m);
	pthread_mutex_unlock(&m->lock);
}

/* Back to no bytes at all. */
static int restart(struct dl *d)
{
	/* Readers stop before the file is cut (and may not go on). */
	live_set(d->live, 0, 0, true);
	meter_add(d->m, -d->have);
	sha256_init(&d->h);
	d->have = 0;
	d->over = false;
	return ftruncate(d->fd, 0) < 0 || lseek(d->fd, 0, SEEK_SET) < 0 ? -1 : 0;
}

static void on_start(void *arg, long status)
{
	struct dl *d = arg;

	/* Asked for a range, given the whole: start again. */
	if (status != 206 && d->have != 0 && restart(d) < 0)
		d->over = true;
}

static int on_data(void *arg, const void *p, size_t n)
{
	struct dl *d = arg;

	if (d->over || d->have + (long long)n > d->want) {
		d->over = true; /* more than the manifest said: a hostile or broken server */
		return -1;
	}
	sha256_update(&d->h, n, p);
	/* What the calls before wrote is in the file (this piece is written
	 * after this call): readable. */
	live_set(d->live, d->have, 0, false);
	d->have += (long long)n;
	meter_add(d->m, (long long)n);
	return 0;
}

static bool matches(struct dl *d, const char *digest)
{
	uint8_t sum[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	sha256_digest(&d->h, sizeof(sum), sum);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	return d->have == d->want && strcmp(hex, digest + 7) == 0;
}

/* A new file of ours at path (under tmp/), made with O_EXCL: whatever was
 * left at that name (a dead process's with our pid, or something a member
 * planted: a file, a link, a FIFO) is removed, never written through. */
static int create_own(const char *path, struct err *e)
{
	for (int i = 0; i < 3; i++) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0) {
			if (fchmod(fd, STORE_FILE_MODE) == 0)
				return fd;
			close(fd);
			unlink(path);
			break;
		}
		if (errno != EEXIST || (unlink(path) < 0 && errno != ENOENT))
			break;
	}
	return err_sys(e, EXIT_CTRUN, "%s", path);
}

/* Reads src to its end, hashing what it reads into d, and (copy) appending
 * it to d->fd: 0, 1 when src holds more than the blob, -1 with e. */
static int take(struct dl *d, int src, bool copy, struct err *e)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(src, buf, sizeof(buf))) > 0) {
		if (d->have + n > d->want)
			return 1;
		if (copy && write_all(d->fd, buf, (size_t)n) < 0)
			return err_sys(e, EXIT_CTRUN, "image store tmp/");
		sha256_update(&d->h, (size_t)n, (const uint8_t *)buf);
		d->have += n;
	}
	return n < 0 ? err_sys(e, EXIT_CTRUN, "image store blob") : 0;
}

/* The blob at path in the store, hashed before it is used: its own file
 * when only the caller or root can write it, else (another member's, who
 * could rewrite it in place) a private copy made while hashing.  The
 * descriptor at offset 0; -2 when it is missing or not the blob's bytes
 * (then it is downloaded again, and replaced); -1 with e. */
static int present(struct dl *d, const char *path, const char *mine, const char *digest,
		   bool quiet, struct err *e)
{
	struct stat st;
	int src = open_regular(path, O_RDONLY | O_NOFOLLOW, &st), out, r;
	bool own;

	if (src < 0)
		return -2;
	if (st.st_size != d->want) {
		close(src);
		return -2;
	}
	own = (st.st_uid == geteuid() || st.st_uid == 0) && (st.st_mode & 022) == 0;
	if (!own) {
		d->fd = create_own(mine, e);
		if (d->fd < 0) {
			close(src);
			return -1;
		}
		unlink(mine); /* the copy has no name: no one can reach it */
	}
	r = take(d, src, !own, e);
	out = own ? src : d->fd;
	if (r == 0 && matches(d, digest) && lseek(out, 0, SEEK_SET) == 0) {
		if (!own)
			close(src);
		d->fd = -1;
		return out;
	}
	close(src);
	if (!own)
		close(d->fd);
	d->fd = -1;
	sha256_init(&d->h);
	d->have = 0;
	if (r < 0)
		return -1;
	if (!quiet)
		fprintf(stderr, "ctrun: warning: blob %s in the image store is not the bytes its "
			"digest names (changed since it was stored): downloading it again\n",
			digest);
	return -2;
}

/* The bytes an interrupted pull left at part (tmp/HEX.part), taken by
 * rename (so one puller resumes them) and then only read: whoever left
 * them, they are hashed with the rest and the whole checked against the
 * digest.  Copied into d->fd; 0 (none usable is no error), -1 with e. */
static int resume(struct dl *d, const char *part, const char *taken, struct err *e)
{
	struct stat st;
	int src, r;

	if (rename(part, taken) < 0)
		return 0;
	src = open_regular(taken, O_RDONLY | O_NOFOLLOW, &st);
	unlink(taken);
	if (src < 0)
		return 0; /* a link, a FIFO, a folder: not a partial blob */
	r = take(d, src, true, e);
	close(src);
	if (r < 0)
		return -1;
	if (r == 1 && restart(d) < 0)
		return err_sys(e, EXIT_CTRUN, "image store tmp/");
	return 0;
}

/* blob_fetch without telling live that it ended. */
static int fetch(struct session *s, const char *store, const struct descriptor *desc,
		 struct blob_meter *m, struct blob_live *live, struct err *e)
{
	char path[PATH_MAX], mine[PATH_MAX], part[PATH_MAX], taken[PATH_MAX], what[160];
	char where[96], name[96];
	struct dl d = { .fd = -1, .want = desc->size, .m = m };
	int resumes = 0, fd;
	bool resumed;

	snprintf(name, sizeof(name), "%s.taken", desc->digest + 7);
	if (store_blob(store, desc->digest, path, sizeof(path), e) < 0 ||
	    xsnprintf(part, sizeof(part), "%s/tmp/%s.part", store, desc->digest + 7) < 0 ||
	    store_tmp(store, desc->digest + 7, mine, sizeof(mine), e) < 0 ||
	    store_tmp(store, name, taken, sizeof(taken), e) < 0)
		return -1;
	snprintf(what, sizeof(what), "blob %.19s", desc->digest);
	sha256_init(&d.h);
	fd = present(&d, path, mine, desc->digest, s->cfg->quiet, e);
	if (fd != -2) {
		if (fd >= 0)
			meter_add(m, desc->size);
		return fd;
	}
	d.fd = create_own(mine, e);
	if (d.fd < 0)
		return -1;
	if (resume(&d, part, taken, e) < 0)
		goto bad;
	resumed = d.have > 0;
	/* Read as it arrives; bytes an earlier pull left are not read before
	 * the whole is verified (they might be another's, and replaced). */
	if (!resumed) {
		d.live = live;
		live_start(live, d.fd, 0);
	}
	if (resumed && s->cfg->verbose > 0)
		fprintf(stderr, "ctrun: %s: resuming at byte %lld\n", what, d.have);
	meter_add(m, d.have);
	snprintf(where, sizeof(where), "blobs/%s", desc->digest);
	for (;;) {
		while (d.have < d.want || d.want == 0) {
			struct http_req r = { .fd = d.fd, .range_from = d.have, .on_start = on_start,
					      .on_data = on_data, .arg = &d };
			struct http_resp o;
			int g = session_get(s, where, &r, &o, what, e);

			http_resp_free(&o);
			if (d.over) {
				err_set(e, EXIT_CTRUN, "%s: the registry sent more than the %lld bytes "
					"its manifest says", what, d.want);
				goto bad;
			}
			if (g == 0)
				break;
			/* A dropped connection after some bytes: go on from there. */
			if (o.written == 0 || ++resumes > RESUMES_MAX)
				goto out;
			if (s->cfg->verbose > 0)
				fprintf(stderr, "ctrun: %s: connection lost at byte %lld, resuming\n",
					what, d.have);
		}
		if (matches(&d, desc->digest))
			break;
		/* Bytes someone left in tmp/ were not the blob's: once more, whole. */
		if (resumed) {
			resumed = false;
			if (s->cfg->verbose > 0)
				fprintf(stderr, "ctrun: %s: the partial download was not the blob's; "
					"downloading it whole\n", what);
			if (restart(&d) < 0) {
				err_sys(e, EXIT_CTRUN, "%s", mine);
				goto bad;
			}
			continue;
		}
		err_set(e, EXIT_CTRUN, "%s: digest mismatch (%lld of %lld bytes; the registry or "
			"something between sent other bytes than the manifest names): removed",
			what, d.have, d.want);
		goto bad;
	}
	/* Published for the next pull; this one goes on with its own descriptor,
	 * whatever is renamed over the name meanwhile. */
	if (fsync(d.fd) < 0 || rename(mine, path) < 0 || lseek(d.fd, 0, SEEK_SET) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		goto bad;
	}
	return d.fd;
bad:
	unlink(mine);
	goto done;
out:
	/* Keep the bytes for the next pull to resume. */
	if (d.have > 0)
		rename(mine, part);
	else
		unlink(mine);
done:
	close(d.fd);
	return -1;
}

int blob_fetch(struct session *s, const char *store, const struct descriptor *desc,
	       struct blob_meter *m, struct blob_live *live, struct err *e)
{
	int fd = fetch(s, store, desc, m, live, e);

	if (fd >= 0) {
		live_start(live, fd, desc->size);
		live_set(live, desc->size, 1, false);
	} else {
		live_set(live, -1, -1, false);
	}
	return fd;
}

int blobs_fit(const struct manifest *m, unsigned long long max, unsigned long long need,
	      unsigned long long avail, const char *name, struct err *e)
{
	unsigned long long sum = 0;
	char a[32], b[32];

	if ((unsigned long long)m->config.size > LAYERFILE_CONFIG_MAX) {
		size_str((unsigned long long)m->config.size, a, sizeof(a));
		size_str(LAYERFILE_CONFIG_MAX, b, sizeof(b));
		return err_set(e, EXIT_CTRUN, "%s: its config %.19s is %s, more than an image config "
			       "may be (%s): not downloaded", name, m->config.digest, a, b);
	}
	size_str(max, b, sizeof(b));
	for (size_t i = 0; i < m->nlayers; i++) {
		unsigned long long n = (unsigned long long)m->layers[i].size;

		if (max > 0 && n > max) {
			size_str(n, a, sizeof(a));
			return err_set(e, EXIT_CTRUN, "%s: layer %zu (%.19s) is %s, more than [cache] "
				       "max_unpacked (%s): not downloaded (raise max_unpacked if the "
				       "image is meant to be that big)", name, i + 1,
				       m->layers[i].digest, a, b);
		}
		sum += n;
	}
	if (max > 0 && sum > max) {
		size_str(sum, a, sizeof(a));
		return err_set(e, EXIT_CTRUN, "%s: its layers are %s, more than [cache] max_unpacked "
			       "(%s): not downloaded (raise max_unpacked if the image is meant to be "
			       "that big)", name, a, b);
	}
	if (need > avail) {
		size_str(need, a, sizeof(a));
		size_str(avail, b, sizeof(b));
		return err_set(e, EXIT_CTRUN, "%s: %s to download, more than the %s free in the image "
			       "store: not downloaded (free space there, or set [registry] store)",
			       name, a, b);
	}
	return 0;
}

int blobs_budget(const char *store, const struct manifest *m, unsigned long long max,
		 const char *name, struct err *e)
{
	unsigned long long need = 0;
	char path[PATH_MAX];
	struct statvfs vfs;
	struct stat st;

	for (size_t i = 0; i <= m->nlayers; i++) {
		const struct descriptor *d = i == 0 ? &m->config : &m->layers[i - 1];

		if (store_blob(store, d->digest, path, sizeof(path), e) < 0)
			return -1;
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != d->size)
			need += (unsigned long long)d->size;
	}
	if (xsnprintf(path, sizeof(path), "%s/blobs/sha256", store) < 0 || statvfs(path, &vfs) < 0)
		return err_sys(e, EXIT_CTRUN, "image store %s", store);
	return blobs_fit(m, max, need, (unsigned long long)vfs.f_bavail * vfs.f_frsize, name, e);
}
