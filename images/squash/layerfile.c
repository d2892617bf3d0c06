/* layerfile.c - layers and config given as files (see layerfile.h). */
#include "layerfile.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unpack/archive_dl.h"
#include "imgconfig.h"
#include "mlayer.h"
#include "util.h"

#define BLOCK 65536

/* The first bytes of a layer read to know its compression (a tar header). */
#define HEAD 512

/* A layer's reader: its compression checked by the first bytes (head,
 * n of them), which the reader is then given again.  Only gzip and zstd
 * are enabled, so no other decoder can be set up whatever the bytes say,
 * and only once (archive_filter.h). */
static int apply(struct archive *a, const unsigned char *head, size_t n, size_t idx,
		 const char *what, struct sqimage *s, struct unpack_limit *l, struct err *e,
		 int (*open)(struct archive *a, void *arg), void *arg)
{
	char name[512];

	snprintf(name, sizeof(name), "layer %zu (%s)", idx + 1, what);
	if (archive_filter_check(head, n, FILTERS_PULLED, name, e) < 0)
		return -1;
	archive_filters_enable(a, FILTERS_PULLED);
	archive_read_support_format_tar(a);
	if (open(a, arg) != ARCHIVE_OK) {
		if (e->code == 0)
			err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
		return -1;
	}
	if (archive_filter_once(a, name, e) < 0)
		return -1;
	return mlayer_apply(a, s, name, l, e);
}

static int open_fd(struct archive *a, void *arg)
{
	int fd = *(int *)arg;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return ARCHIVE_FATAL;
	return archive_read_open_fd(a, fd, BLOCK);
}

int layerfile_apply(int fd, size_t idx, const char *what, struct sqimage *s,
		    struct unpack_limit *l, struct err *e)
{
	struct archive *a;
	unsigned char head[HEAD];
	ssize_t n;
	int rv;

	if (archive_dl_load(e) < 0)
		return err_wrap(e, "layer %zu (%s)", idx + 1, what);
	n = pread(fd, head, sizeof(head), 0);
	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "layer %zu (%s)", idx + 1, what);
	a = archive_read_new();
	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	rv = apply(a, head, (size_t)n, idx, what, s, l, e, open_fd, &fd);
	archive_read_free(a);
	return rv;
}

/* libarchive's read callback over a layer_source: the head first. */
struct streamed {
	const struct layer_source *src;
	unsigned char buf[BLOCK];
	size_t head;      /* bytes of buf the head check read, handed out first */
	struct err *e;
};

static la_ssize_t stream_read(struct archive *a, void *arg, const void **out)
{
	struct streamed *st = arg;
	long long n;

	*out = st->buf;
	if (st->head > 0) {
		n = (long long)st->head;
		st->head = 0;
		return (la_ssize_t)n;
	}
	n = st->src->read(st->src->arg, st->buf, sizeof(st->buf), st->e);
	if (n < 0)
		archive_set_error(a, EIO, "%s", st->e->msg);
	return (la_ssize_t)n;
}

static int open_stream(struct archive *a, void *arg)
{
	return archive_read_open(a, arg, NULL, stream_read, NULL);
}

int layerfile_apply_source(const struct layer_source *src, size_t idx, const char *what,
			   struct sqimage *s, struct unpack_limit *l, struct err *e)
{
	struct streamed *st = calloc(1, sizeof(*st));
	struct archive *a = NULL;
	int rv = -1;

	if (st == NULL)
		return err_sys(e, EXIT_CTRUN, "layer %zu (%s)", idx + 1, what);
	st->src = src;
	st->e = e;
	if (archive_dl_load(e) < 0) {
		err_wrap(e, "layer %zu (%s)", idx + 1, what);
		goto out;
	}
	/* Enough of it to know its compression (or all of a tiny one). */
	while (st->head < HEAD) {
		long long n = src->read(src->arg, st->buf + st->head, sizeof(st->buf) - st->head, e);

		if (n < 0) {
			err_wrap(e, "layer %zu (%s)", idx + 1, what);
			goto out;
		}
		if (n == 0)
			break;
		st->head += (size_t)n;
	}
	a = archive_read_new();
	if (a == NULL) {
		err_set(e, EXIT_CTRUN, "libarchive: out of memory");
		goto out;
	}
	rv = apply(a, st->buf, st->head, idx, what, s, l, e, open_stream, st);
out:
	if (a != NULL)
		archive_read_free(a);
	free(st);
	return rv;
}

/* The config's bytes, never more than LAYERFILE_CONFIG_MAX of them read:
 * its size is checked first, and the read stops one byte past the bound. */
static char *read_config(int fd, const char *what, size_t *len, struct err *e)
{
	size_t n = 0;
	struct stat st;
	char *buf;

	if (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)LAYERFILE_CONFIG_MAX) {
		err_set(e, EXIT_CTRUN, "%s: %s", what, S_ISREG(st.st_mode) ? "larger than 16 MiB" :
			"not a regular file");
		return NULL;
	}
	buf = read_fd_max(fd, LAYERFILE_CONFIG_MAX + 1, &n);
	if (buf == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	if (n > LAYERFILE_CONFIG_MAX) { /* grew since the fstat */
		err_set(e, EXIT_CTRUN, "%s: larger than 16 MiB", what);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int layerfile_config(int fd, struct sqimage *s, struct err *e)
{
	struct imgconfig c;
	json_object *j;
	char *text;
	size_t len;
	int rv;

	text = read_config(fd, "image config", &len, e);
	if (text == NULL)
		return -1;
	j = json_tokener_parse(text);
	free(text);
	if (j == NULL)
		return err_set(e, EXIT_CTRUN, "image config: not JSON");
	rv = imgconfig_parse(j, "image config", &c, e);
	json_object_put(j);
	if (rv < 0)
		return -1;
	rv = mlayer_config(&c, s, e);
	imgconfig_free(&c);
	return rv;
}
