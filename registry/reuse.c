/* reuse.c - the stored image a new one is built on (see reuse.h). */
#include "reuse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "squash/sqimage.h"
#include "store.h"
#include "util.h"

#define MAGIC "ctrun-layers 1\n"

size_t reuse_prefix(const char *text, size_t len, const struct manifest *m)
{
	size_t k = 0, off = sizeof(MAGIC) - 1;

	if (len < off || memcmp(text, MAGIC, off) != 0)
		return 0;
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl != NULL ? (size_t)(nl - (text + off)) : 0;

		/* Every line whole, each the next layer of m. */
		if (nl == NULL || k >= m->nlayers || n != strlen(m->layers[k].digest) ||
		    memcmp(text + off, m->layers[k].digest, n) != 0)
			return 0;
		k++;
		off += n + 1;
	}
	return k < m->nlayers ? k : 0;
}

int reuse_record_text(const struct manifest *m, char **buf, size_t *len)
{
	size_t size = sizeof(MAGIC), off;
	char *b;

	for (size_t i = 0; i < m->nlayers; i++)
		size += strlen(m->layers[i].digest) + 1;
	b = malloc(size);
	if (b == NULL)
		return -1;
	memcpy(b, MAGIC, sizeof(MAGIC) - 1);
	off = sizeof(MAGIC) - 1;
	for (size_t i = 0; i < m->nlayers; i++)
		off += (size_t)snprintf(b + off, size - off, "%s\n", m->layers[i].digest);
	*buf = b;
	*len = off;
	return 0;
}

/* sqsh's record: its ".sqsh" replaced by ".layers". */
static int record_of(const char *sqsh, char *out, size_t size)
{
	size_t n = strlen(sqsh);

	if (n < 5 || strcmp(sqsh + n - 5, ".sqsh") != 0)
		return -1;
	return xsnprintf(out, size, "%.*s.layers", (int)(n - 5), sqsh);
}

bool reuse_record_valid(const char *text, size_t len)
{
	size_t off = sizeof(MAGIC) - 1, k = 0;

	if (len < off || len > REUSE_RECORD_MAX || memcmp(text, MAGIC, off) != 0)
		return false;
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		char d[80];
		size_t n = nl != NULL ? (size_t)(nl - (text + off)) : 0;

		if (nl == NULL || n >= sizeof(d))
			return false;
		memcpy(d, text + off, n);
		d[n] = '\0';
		if (strlen(d) != n || !digest_valid(d)) /* no NUL within */
			return false;
		k++;
		off += n + 1;
	}
	return k > 0;
}

int reuse_record_write_text(const char *store, const char *sqsh, const char *text, size_t len,
			    struct err *e)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd;

	if (record_of(sqsh, path, sizeof(path)) < 0 ||
	    store_tmp(store, "layers", tmp, sizeof(tmp), e) < 0)
		return err_set(e, EXIT_CTRUN, "%s: no name for its layer record", sqsh);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, STORE_FILE_MODE);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	if (write_all(fd, text, len) < 0 || fchmod(fd, STORE_FILE_MODE) < 0 || close(fd) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", tmp);
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

int reuse_record_write(const char *store, const char *sqsh, const struct manifest *m,
		       struct err *e)
{
	char *text = NULL;
	size_t len = 0;
	int rv;

	if (reuse_record_text(m, &text, &len) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: its layer record", sqsh);
	rv = reuse_record_write_text(store, sqsh, text, len, e);
	free(text);
	return rv;
}

/* A record's name: "sha256-<64 hex>.layers"; its digest into digest. */
static bool record_name(const char *name, char *digest, size_t size)
{
	size_t n = strlen(name);

	if (n != 7 + 64 + 7 || strncmp(name, "sha256-", 7) != 0 ||
	    strcmp(name + 71, ".layers") != 0 || strspn(name + 7, "0123456789abcdef") < 64)
		return false;
	snprintf(digest, size, "sha256:%.64s", name + 7);
	return digest_valid(digest);
}

/* The record at path, whole (a trusted regular file of at most
 * REUSE_RECORD_MAX bytes): malloc'd into *buf, *len bytes; -1 when not. */
static int read_record(const char *path, const struct trust *t, char **buf, size_t *len)
{
	struct err e = { 0 };
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd = store_open(path, t, &st, &e);

	*buf = NULL;
	if (fd < 0)
		return -1;
	if (st.st_size <= 0 || st.st_size > (off_t)REUSE_RECORD_MAX ||
	    (*buf = malloc((size_t)st.st_size)) == NULL) {
		close(fd);
		return -1;
	}
	for (; got < (size_t)st.st_size; got += (size_t)n) {
		n = pread(fd, *buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			n = 0;
		else if (n <= 0)
			break;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	*len = got;
	return 0;
}

/* The layers shared with m by the record at path (0 none or unreadable). */
static size_t shared(const char *path, const struct trust *t, const struct manifest *m)
{
	char *buf;
	size_t len, k;

	if (read_record(path, t, &buf, &len) < 0)
		return 0;
	k = reuse_prefix(buf, len, m);
	free(buf);
	return k;
}

int reuse_record_read(const char *store, const char *sqsh, char **text, size_t *len,
		      struct err *e)
{
	char path[PATH_MAX];
	struct trust t;
	int r;

	*text = NULL;
	*len = 0;
	if (record_of(sqsh, path, sizeof(path)) < 0)
		return 0;
	r = store_trust(store, &t, e);
	if (r <= 0)
		return r;
	if (read_record(path, &t, text, len) < 0)
		return 0;
	if (!reuse_record_valid(*text, *len)) {
		free(*text);
		*text = NULL;
		*len = 0;
		return 0;
	}
	return 1;
}

int reuse_find(const char *store, const struct manifest *m, char *digest, size_t size,
	       size_t *k, struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX], d[80], sqsh[PATH_MAX];
	struct trust t;
	struct dirent *ent;
	DIR *dh;
	int r = store_trust(store, &t, e);

	*k = 0;
	if (r <= 0)
		return r;
	if (m->nlayers < 2 || xsnprintf(dir, sizeof(dir), "%s/images", store) < 0)
		return 0;
	dh = opendir(dir);
	if (dh == NULL)
		return 0;
	while ((ent = readdir(dh)) != NULL) {
		size_t n;

		if (!record_name(ent->d_name, d, sizeof(d)) ||
		    xsnprintf(path, sizeof(path), "%s/%s", dir, ent->d_name) < 0)
			continue;
		n = shared(path, &t, m);
		if (n <= *k || store_image(store, d, sqsh, sizeof(sqsh), e) < 0)
			continue;
		if (store_image_check(store, sqsh, e) != 1)
			continue;
		*k = n;
		snprintf(digest, size, "%s", d);
	}
	closedir(dh);
	memset(e, 0, sizeof(*e)); /* a refused candidate is only not used */
	return *k > 0;
}

int reuse_begin(const struct registry_cfg *c, const char *store, const struct manifest *m,
		      const char *name, int out, const struct sqimage_opts *opts,
		      struct sqimage **img, struct unpack_limit *lim, size_t *k, struct err *e)
{
	char digest[80], sqsh[PATH_MAX], what[PATH_MAX + 160];
	struct err why = { 0 };
	struct trust t;
	struct stat st;
	unsigned long long unpacked = 0;
	int fd = -1;

	*k = 0;
	if (c->no_reuse || reuse_find(store, m, digest, sizeof(digest), k, &why) != 1)
		return 0;
	if (store_image(store, digest, sqsh, sizeof(sqsh), &why) == 0 &&
	    store_trust(store, &t, &why) == 1 && (fd = store_open(sqsh, &t, &st, &why)) >= 0 &&
	    sqimage_base(*img, fd, (unsigned)*k, &unpacked, &why) == 0 &&
	    unpack_limit_add(lim, unpacked, &why) == 0) {
		close(fd);
		if (c->verbose > 0)
			fprintf(stderr, "ctrun: %s: its first %zu layers from the stored image %s\n",
				name, *k, digest);
		/* A base whose tree alone passes the bound is named, not the
		 * first new layer (which would only find it passed). */
		snprintf(what, sizeof(what), "%s: the stored image %s it is built on", name, digest);
		return unpack_limit_tree(lim, sqimage_tree(*img)->bytes, what, e);
	}
	if (fd >= 0)
		close(fd);
	if (!c->quiet)
		fprintf(stderr, "ctrun: %s: not built on the stored image %s (%s): pulling it whole\n",
			name, digest, why.msg[0] ? why.msg : "it is gone");
	*k = 0;
	lim->used = 0;
	sqimage_free(*img);
	*img = NULL;
	if (ftruncate(out, 0) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", name);
	return sqimage_open(img, out, opts, e);
}
