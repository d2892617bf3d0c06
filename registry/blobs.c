/* blobs.c - a blob downloaded, resumed and verified (see blobs.h). */
#include "blobs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "util.h"

#define RESUMES_MAX 5

struct dl {
	struct sha256_ctx h;
	int fd;
	long long have, want;
	struct blob_meter *m;
	bool over;
};

static void meter_add(struct blob_meter *m, long long n)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->lock);
	m->done = (unsigned long long)((long long)m->done + n);
	if (m->tick != NULL)
		m->tick(m);
	pthread_mutex_unlock(&m->lock);
}

static void on_start(void *arg, long status)
{
	struct dl *d = arg;

	if (status == 206 || d->have == 0)
		return;
	/* Asked for a range, given the whole: start again. */
	meter_add(d->m, -d->have);
	sha256_init(&d->h);
	d->have = 0;
	if (ftruncate(d->fd, 0) < 0 || lseek(d->fd, 0, SEEK_SET) < 0)
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
	d->have += (long long)n;
	meter_add(d->m, (long long)n);
	return 0;
}

/* Hashes what a resumed partial file holds already. */
static int hash_existing(struct dl *d, struct err *e)
{
	char buf[65536];
	ssize_t n;

	if (lseek(d->fd, 0, SEEK_SET) < 0)
		return err_sys(e, EXIT_CTRUN, "partial download");
	while ((n = read(d->fd, buf, sizeof(buf))) > 0) {
		if (d->have + n > d->want)
			return -1;
		sha256_update(&d->h, (size_t)n, (const uint8_t *)buf);
		d->have += n;
	}
	return n < 0 ? err_sys(e, EXIT_CTRUN, "partial download") : 0;
}

static bool matches(struct dl *d, const char *digest)
{
	uint8_t sum[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	sha256_digest(&d->h, sizeof(sum), sum);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	return strcmp(hex, digest + 7) == 0;
}

int blob_fetch(struct session *s, const char *store, const struct descriptor *desc,
	       struct blob_meter *m, char *path, size_t size, struct err *e)
{
	char mine[PATH_MAX], part[PATH_MAX], what[160], where[96];
	struct dl d = { .fd = -1, .want = desc->size, .m = m };
	struct stat st;
	int rv = -1, resumes = 0;

	if (store_blob(store, desc->digest, path, size, e) < 0 ||
	    xsnprintf(part, sizeof(part), "%s/tmp/%s.part", store, desc->digest + 7) < 0 ||
	    store_tmp(store, desc->digest + 7, mine, sizeof(mine), e) < 0)
		return -1;
	snprintf(what, sizeof(what), "blob %.19s", desc->digest);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == desc->size) {
		meter_add(m, desc->size);
		return 0;
	}
	sha256_init(&d.h);
	/* An interrupted pull's bytes: ours if the rename wins. */
	if (rename(part, mine) == 0) {
		d.fd = open(mine, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (d.fd >= 0 && hash_existing(&d, e) < 0) {
			close(d.fd);
			d.fd = -1;
			unlink(mine);
			sha256_init(&d.h);
			d.have = 0;
		}
		if (d.fd >= 0 && s->cfg->verbose > 0 && d.have > 0)
			fprintf(stderr, "ctrun: %s: resuming at byte %lld\n", what, d.have);
		meter_add(m, d.have);
	}
	if (d.fd < 0)
		d.fd = open(mine, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d.fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", mine);
	if (lseek(d.fd, 0, SEEK_END) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", mine);
		goto out;
	}
	snprintf(where, sizeof(where), "blobs/%s", desc->digest);
	while (d.have < d.want || d.want == 0) {
		struct http_req r = { .fd = d.fd, .range_from = d.have, .on_start = on_start,
				      .on_data = on_data, .arg = &d };
		struct http_resp o;
		int g = session_get(s, where, &r, &o, what, e);

		http_resp_free(&o);
		if (d.over) {
			err_set(e, EXIT_CTRUN, "%s: the registry sent more than the %lld bytes its "
				"manifest says", what, d.want);
			goto bad;
		}
		if (g == 0)
			break;
		/* A dropped connection after some bytes: go on from there. */
		if (o.written == 0 || ++resumes > RESUMES_MAX)
			goto out;
		if (s->cfg->verbose > 0)
			fprintf(stderr, "ctrun: %s: connection lost at byte %lld, resuming\n", what,
				d.have);
	}
	if (d.have != d.want || !matches(&d, desc->digest)) {
		err_set(e, EXIT_CTRUN, "%s: digest mismatch (%lld of %lld bytes; the registry or "
			"something between sent other bytes than the manifest names): removed",
			what, d.have, d.want);
		goto bad;
	}
	if (fsync(d.fd) < 0 || rename(mine, path) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		goto bad;
	}
	rv = 0;
	goto done;
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
	if (d.fd >= 0)
		close(d.fd);
	return rv;
}
