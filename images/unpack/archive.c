/* archive.c - `docker save` and OCI image-layout archives (tar, plain or
 * compressed with a decompressor archive_filter.h enables).
 *
 * The outer tar is read with libarchive; its small JSON members (manifest.json,
 * index.json, the OCI manifest) say which members are the layers, bottom first.
 * Each layer is then streamed out of the outer tar into a second libarchive
 * reader (so a layer is never copied to disk) and applied by layer.c.  The
 * outer file is reopened per member: libarchive skips the other members by
 * seeking, which costs nothing next to unpacking; a compressed archive is
 * decompressed once first, into an unnamed file beside the destination, as
 * it could not seek.  Last, the image config's
 * Env and WorkingDir go into the root (imgconfig.c), as enroot's import does. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_dl.h"
#include "archive_filter.h"
#include "imgconfig.h"
#include "layer.h"
#include "progress.h"
#include "rootpath.h"
#include "strv.h"
#include "unpack.h"
#include "util.h"

/* JSON members bigger than this are not an image's metadata. */
#define JSON_MAX (16u << 20)
/* Docker's overlay driver stops at 128 layers; each layer costs a pass over
 * the archive's headers, so a hostile manifest may not list 100,000. */
#define LAYERS_MAX 1000
#define BLOCK 65536

/* The archive as named (for messages) and as opened: a compressed one is
 * read from its decompressed copy (archive_decompress). */
struct src {
	const char *name;
	const char *open;
};

static struct archive *outer_open(const struct src *src, struct err *e)
{
	struct archive *a = archive_read_new();

	if (a == NULL) {
		err_set(e, EXIT_CTRUN, "libarchive: out of memory");
		return NULL;
	}
	archive_filters_enable(a, FILTERS_ARCHIVE);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, src->open, BLOCK) != ARCHIVE_OK) {
		err_set(e, EXIT_CTRUN, "%s: %s", src->name, archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	if (archive_filter_once(a, src->name, e) < 0) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* Positions `a` at member `name`; 1 found, 0 not found, -1 error. */
static int seek_member(struct archive *a, const char *name, long long *size, struct err *e)
{
	struct archive_entry *ent;
	char clean[PATH_MAX];
	int r;

	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const char *p = archive_entry_pathname(ent);

		if (p == NULL || rootpath_clean(p, clean, sizeof(clean)) < 0)
			continue;
		if (strcmp(clean, name) != 0 || archive_entry_filetype(ent) != AE_IFREG)
			continue;
		if (size != NULL)
			*size = archive_entry_size(ent);
		return 1;
	}
	if (r != ARCHIVE_EOF)
		return err_set(e, EXIT_CTRUN, "%s", archive_error_string(a));
	return 0;
}

/* Reads member `name` (a small JSON file) and parses it. */
static json_object *read_json(const struct src *src, const char *name, struct err *e)
{
	struct archive *a = outer_open(src, e);
	json_object *j = NULL;
	long long size = 0;
	char *buf = NULL;
	la_ssize_t n;
	int r;

	if (a == NULL)
		return NULL;
	r = seek_member(a, name, &size, e);
	if (r <= 0) {
		if (r == 0)
			err_set(e, EXIT_CTRUN, "%s: no member '%s'", src->name, name);
		goto out;
	}
	if (size < 0 || size > JSON_MAX) {
		err_set(e, EXIT_CTRUN, "%s: member '%s' is too big (%lld bytes)", src->name, name, size);
		goto out;
	}
	buf = malloc((size_t)size + 1);
	if (buf == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", name);
		goto out;
	}
	n = archive_read_data(a, buf, (size_t)size);
	if (n != (la_ssize_t)size) {
		err_set(e, EXIT_CTRUN, "%s: reading '%s': %s", src->name, name,
			n < 0 ? archive_error_string(a) : "short read");
		goto out;
	}
	buf[size] = '\0';
	j = json_tokener_parse(buf);
	if (j == NULL)
		err_set(e, EXIT_CTRUN, "%s: member '%s' is not valid JSON", src->name, name);
out:
	free(buf);
	archive_read_free(a);
	return j;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *jarr(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

/* docker save: manifest.json = [{"Config": ..., "Layers": ["<id>/layer.tar", ...]}].
 * An archive of several images unpacks the first, as `docker load` lists it first.
 * `config` gets the Config member's name ("" when there is none). */
static int docker_layers(const struct src *src, struct strv *layers, char *config, size_t size,
			 struct err *e)
{
	json_object *m = read_json(src, "manifest.json", e), *l;
	const char *cfg;
	int rv = -1;

	if (m == NULL)
		return -1;
	if (!json_object_is_type(m, json_type_array) || json_object_array_length(m) == 0 ||
	    (l = jarr(json_object_array_get_idx(m, 0), "Layers")) == NULL) {
		err_set(e, EXIT_CTRUN, "%s: manifest.json has no Layers list", src->name);
		goto out;
	}
	cfg = jstr(json_object_array_get_idx(m, 0), "Config");
	if (xsnprintf(config, size, "%s", cfg != NULL ? cfg : "") < 0) {
		err_set(e, EXIT_CTRUN, "%s: manifest.json: Config path too long", src->name);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(l); i++) {
		json_object *s = json_object_array_get_idx(l, i);

		if (!json_object_is_type(s, json_type_string)) {
			err_set(e, EXIT_CTRUN, "%s: manifest.json: layer %zu is not a path", src->name, i);
			goto out;
		}
		if (strv_push(layers, json_object_get_string(s)) < 0) {
			err_sys(e, EXIT_CTRUN, "manifest.json");
			goto out;
		}
	}
	rv = 0;
out:
	json_object_put(m);
	return rv;
}

/* "sha256:abc..." -> "blobs/sha256/abc...", refusing anything that is not a plain digest. */
static int blob_path(const char *digest, char *out, size_t size)
{
	const char *colon = digest != NULL ? strchr(digest, ':') : NULL;

	if (colon == NULL || colon == digest || colon[1] == '\0' ||
	    strspn(digest, "abcdefghijklmnopqrstuvwxyz0123456789+._-") != (size_t)(colon - digest) ||
	    strspn(colon + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=_-") !=
		    strlen(colon + 1))
		return -1;
	return snprintf(out, size, "blobs/%.*s/%s", (int)(colon - digest), digest, colon + 1) <
				       (int)size ? 0 : -1;
}

/* OCI layout: index.json -> (nested indexes) -> the image manifest -> layers[].digest,
 * and config.digest into `config` ("" when the manifest names none). */
static int oci_layers(const struct src *src, struct strv *layers, char *config, size_t size,
		      struct err *e)
{
	char blob[PATH_MAX];
	json_object *j = read_json(src, "index.json", e), *next, *arr = NULL, *cfg;
	int rv = -1;

	for (int depth = 0; j != NULL; depth++) {
		arr = jarr(j, "layers");
		if (arr != NULL)
			break; /* an image manifest */
		arr = jarr(j, "manifests");
		if (arr == NULL || json_object_array_length(arr) == 0 || depth > 4) {
			err_set(e, EXIT_CTRUN, "%s: OCI index without manifests", src->name);
			goto out;
		}
		/* Several manifests: the first for linux/amd64, else the first. */
		next = json_object_array_get_idx(arr, 0);
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *m = json_object_array_get_idx(arr, i), *plat;

			if (json_object_object_get_ex(m, "platform", &plat) &&
			    jstr(plat, "architecture") != NULL &&
			    strcmp(jstr(plat, "architecture"), "amd64") == 0) {
				next = m;
				break;
			}
		}
		if (blob_path(jstr(next, "digest"), blob, sizeof(blob)) < 0) {
			err_set(e, EXIT_CTRUN, "%s: OCI index: bad digest", src->name);
			goto out;
		}
		json_object_put(j);
		j = read_json(src, blob, e);
	}
	if (j == NULL)
		return -1;
	config[0] = '\0';
	if (json_object_object_get_ex(j, "config", &cfg) &&
	    blob_path(jstr(cfg, "digest"), config, size) < 0) {
		err_set(e, EXIT_CTRUN, "%s: OCI manifest: the config has a bad digest", src->name);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const char *d = jstr(json_object_array_get_idx(arr, i), "digest");

		if (blob_path(d, blob, sizeof(blob)) < 0) {
			err_set(e, EXIT_CTRUN, "%s: OCI manifest: layer %zu has a bad digest", src->name, i);
			goto out;
		}
		if (strv_push(layers, blob) < 0) {
			err_sys(e, EXIT_CTRUN, "OCI manifest");
			goto out;
		}
	}
	rv = 0;
out:
	json_object_put(j);
	return rv;
}

/* Feeds the current member of the outer archive to the inner reader. */
struct member {
	struct archive *outer;
	struct progress *prog;
	unsigned char head[512]; /* the layer's first bytes: its compression */
	size_t nhead;
	char buf[BLOCK];
};

static la_ssize_t member_read(struct archive *inner, void *arg, const void **buf)
{
	struct member *m = arg;
	la_ssize_t n = archive_read_data(m->outer, m->buf, sizeof(m->buf));

	if (n < 0) {
		archive_set_error(inner, EIO, "%s", archive_error_string(m->outer));
		return -1;
	}
	progress_add(m->prog, (unsigned long long)n);
	if (m->nhead < sizeof(m->head) && n > 0) {
		size_t k = sizeof(m->head) - m->nhead;

		k = (size_t)n < k ? (size_t)n : k;
		memcpy(m->head + m->nhead, m->buf, k);
		m->nhead += k;
	}
	*buf = m->buf;
	return n;
}

static int apply_layer(const struct src *src, const char *name, size_t idx, const char *dest,
		       struct progress *prog, struct unpack_limit *l, struct err *e)
{
	struct member *m = calloc(1, sizeof(*m));
	struct archive *inner = NULL;
	char what[PATH_MAX + 32], clean[PATH_MAX];
	int r, rv = -1;

	snprintf(what, sizeof(what), "layer %zu (%s)", idx + 1, name);
	if (m == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	m->prog = prog;
	if (rootpath_clean(name, clean, sizeof(clean)) < 0) {
		err_set(e, EXIT_CTRUN, "%s: bad member name", what);
		goto out;
	}
	m->outer = outer_open(src, e);
	if (m->outer == NULL)
		goto out;
	r = seek_member(m->outer, clean, NULL, e);
	if (r <= 0) {
		if (r == 0)
			err_set(e, EXIT_CTRUN, "%s: %s: no such member", src->name, what);
		goto out;
	}
	inner = archive_read_new();
	if (inner == NULL) {
		err_set(e, EXIT_CTRUN, "libarchive: out of memory");
		goto out;
	}
	/* Layers may be plain, gzip or zstd tars (OCI media types), and here
	 * also what else archive_filter.h bounds. */
	archive_filters_enable(inner, FILTERS_ARCHIVE);
	archive_read_support_format_tar(inner);
	r = archive_read_open(inner, m, NULL, member_read, NULL);
	/* Opening read the first block: a compression left out (none of its
	 * decoders is enabled) is named, not "Unrecognized archive format". */
	if (archive_filter_check(m->head, m->nhead, FILTERS_ARCHIVE, what, e) < 0)
		goto out;
	if (r != ARCHIVE_OK) {
		err_set(e, EXIT_CTRUN, "%s: %s", what, archive_error_string(inner));
		goto out;
	}
	if (archive_filter_once(inner, what, e) < 0)
		goto out;
	rv = layer_apply(inner, dest, what, l, e);
out:
	if (inner != NULL)
		archive_read_free(inner);
	if (m->outer != NULL)
		archive_read_free(m->outer);
	free(m);
	return rv;
}

/* Sum of the layer members' sizes, for the progress meter. */
static unsigned long long layers_size(const struct src *src, const struct strv *layers)
{
	struct archive *a = outer_open(src, NULL);
	struct archive_entry *ent;
	unsigned long long total = 0;
	char clean[PATH_MAX];

	if (a == NULL)
		return 0;
	while (archive_read_next_header(a, &ent) == ARCHIVE_OK) {
		const char *p = archive_entry_pathname(ent);

		if (p != NULL && rootpath_clean(p, clean, sizeof(clean)) == 0 &&
		    strv_find(layers, clean) >= 0)
			total += (unsigned long long)archive_entry_size(ent);
	}
	archive_read_free(a);
	return total;
}

/* The image config's Env and WorkingDir into dest, as enroot's import does. */
static int apply_config(const struct src *src, const char *config, const char *dest, struct err *e)
{
	char clean[PATH_MAX], what[PATH_MAX + 16];
	struct imgconfig c;
	json_object *j;
	int rv;

	if (config[0] == '\0')
		return 0; /* no config named: the layers' own /etc/environment stays */
	if (rootpath_clean(config, clean, sizeof(clean)) < 0)
		return err_set(e, EXIT_CTRUN, "%s: config path '%s' leaves the archive", src->name,
			       config);
	j = read_json(src, clean, e);
	if (j == NULL)
		return -1;
	snprintf(what, sizeof(what), "image config %s", clean);
	rv = imgconfig_parse(j, what, &c, e);
	json_object_put(j);
	if (rv < 0)
		return err_wrap(e, "%s", src->name);
	rv = imgconfig_apply(&c, dest, e);
	imgconfig_free(&c);
	return rv < 0 ? err_wrap(e, "%s: image config", src->name) : 0;
}

/* The file's compression, by its first bytes: one left out is named (not
 * "unknown format"), and refused before any reader is set up. */
static int check_head(const char *path, struct err *e)
{
	char what[PATH_MAX + 8];
	unsigned char head[512];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image %s", path);
	n = pread(fd, head, sizeof(head), 0);
	close(fd);
	snprintf(what, sizeof(what), "image %s", path);
	return n > 0 ? archive_filter_check(head, (size_t)n, FILTERS_ARCHIVE, what, e) : 0;
}

/* 1 when the archive is compressed (gzip, zstd, bzip2...): libarchive then
 * has more than its "none" filter once the first header is read. */
static int is_compressed(const struct src *src, struct err *e)
{
	struct archive *a = outer_open(src, e);
	struct archive_entry *ent;
	int r;

	if (a == NULL)
		return -1;
	r = archive_read_next_header(a, &ent);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN && r != ARCHIVE_EOF) {
		err_set(e, EXIT_CTRUN, "%s: %s", src->name, archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	r = archive_filter_count(a) > 1;
	archive_read_free(a);
	return r;
}

int archive_unpack(const char *path, enum image_kind kind, const char *dest, bool progress,
		   unsigned long long max, struct err *e)
{
	struct unpack_limit lim = { .image = path, .max = max };
	struct src src0 = { .name = path, .open = path }, *src = &src0;
	struct strv layers = { 0 };
	struct progress prog;
	char what[PATH_MAX + 16], config[PATH_MAX], fdpath[64];
	const char *base = strrchr(path, '/');
	int rv = -1, plain = -1, z;

	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", path);
	base = base != NULL ? base + 1 : path;
	/* Its compression was checked by archive_detect; xz's, lzma's and
	 * lzip's decoders are not enabled here anyway. */
	z = is_compressed(src, e);
	if (z < 0)
		return -1;
	if (z) {
		snprintf(what, sizeof(what), "decompressing %s", base);
		progress_start(&prog, progress, what, 0);
		plain = archive_decompress(src->name, src->open, dest, &lim, &prog, e);
		progress_end(&prog, plain >= 0);
		if (plain < 0)
			return -1;
		/* The decompressed tar is about what its layers unpack to: each
		 * is bounded on its own (both lie on disk until the end). */
		lim.used = 0;
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", plain);
		src0.open = fdpath;
	}
	if ((kind == IMAGE_DOCKER_ARCHIVE ? docker_layers(src, &layers, config, sizeof(config), e)
					  : oci_layers(src, &layers, config, sizeof(config), e)) < 0)
		goto out;
	if (layers.n > LAYERS_MAX) {
		err_set(e, EXIT_CTRUN, "%s: the manifest lists %zu layers; ctrun unpacks at most %d "
			"(squash the image: docker build --squash, or enroot import)", path, layers.n,
			LAYERS_MAX);
		goto out;
	}
	/* Names as they will be compared: cleaned. */
	for (size_t i = 0; i < layers.n; i++) {
		char clean[PATH_MAX];
		char *copy;

		if (rootpath_clean(layers.v[i], clean, sizeof(clean)) < 0) {
			err_set(e, EXIT_CTRUN, "%s: layer path '%s' leaves the archive", path,
				layers.v[i]);
			goto out;
		}
		/* Not in place: "" cleans to ".", which is longer. */
		if (strcmp(clean, ".") == 0) {
			err_set(e, EXIT_CTRUN, "%s: a layer path is empty or names the archive's "
				"root ('%s')", path, layers.v[i]);
			goto out;
		}
		copy = strdup(clean);
		if (copy == NULL) {
			err_sys(e, EXIT_CTRUN, "%s", path);
			goto out;
		}
		free(layers.v[i]);
		layers.v[i] = copy;
	}
	snprintf(what, sizeof(what), "unpacking %s", base);
	progress_start(&prog, progress, what, progress ? layers_size(src, &layers) : 0);
	for (size_t i = 0; i < layers.n; i++)
		if (apply_layer(src, layers.v[i], i, dest, &prog, &lim, e) < 0) {
			progress_end(&prog, false);
			if (!unpack_limit_passed(&lim)) /* that message names the image */
				err_wrap(e, "%s", path);
			goto out;
		}
	progress_end(&prog, true);
	if (apply_config(src, config, dest, e) < 0)
		goto out;
	rv = 0;
out:
	if (plain >= 0)
		close(plain);
	strv_free(&layers);
	return rv;
}

int archive_detect(const char *path, enum image_kind *kind, struct err *e)
{
	struct archive *a;
	struct archive_entry *ent;
	bool docker = false, oci = false;
	char clean[PATH_MAX], what[PATH_MAX + 8];
	int r;

	*kind = IMAGE_UNKNOWN;
	/* Neither squashfs nor SIF (image.c looked first): only libarchive can tell. */
	if (archive_dl_load(e) < 0)
		return err_wrap(e, "image %s", path);
	if (check_head(path, e) < 0)
		return -1;
	a = archive_read_new();
	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	archive_filters_enable(a, FILTERS_ARCHIVE);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, path, BLOCK) != ARCHIVE_OK) {
		archive_read_free(a);
		return 0; /* not something libarchive reads: not an archive */
	}
	snprintf(what, sizeof(what), "image %s", path);
	if (archive_filter_once(a, what, e) < 0) {
		archive_read_free(a);
		return -1;
	}
	while ((r = archive_read_next_header(a, &ent)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		const char *p = archive_entry_pathname(ent);

		if (p == NULL || rootpath_clean(p, clean, sizeof(clean)) < 0)
			continue;
		/* Docker 25+ writes both; manifest.json is the docker view of it. */
		if (strcmp(clean, "manifest.json") == 0) {
			docker = true;
			break;
		}
		if (strcmp(clean, "index.json") == 0 || strcmp(clean, "oci-layout") == 0)
			oci = true;
	}
	archive_read_free(a);
	*kind = docker ? IMAGE_DOCKER_ARCHIVE : oci ? IMAGE_OCI_ARCHIVE : IMAGE_UNKNOWN;
	return 0;
}
