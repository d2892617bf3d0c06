/* manifest.c - image manifests and indexes from a registry's bytes, and the
 * node's platform picked from an index (see manifest.h).  Every field the
 * puller will use is checked here, once: the media types, sha256 digests,
 * sizes, and the number of layers and entries. */
#include "manifest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonbody.h"

#define T_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define T_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define T_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define T_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define T_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define T_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"

#define LAYER_SIZE_MAX (1LL << 40) /* 1 TiB: more is a hostile or broken registry */

static const char schema1_msg[] =
	"schema 1 manifests are not supported; push the image again with a current tool";

/* -1 unknown, else the kind of a manifest media type (case-insensitive, as
 * media types are). */
static int kind_of(const char *type)
{
	if (strcasecmp(type, T_DOCKER_MANIFEST) == 0 || strcasecmp(type, T_OCI_MANIFEST) == 0)
		return MANIFEST_IMAGE;
	if (strcasecmp(type, T_DOCKER_LIST) == 0 || strcasecmp(type, T_OCI_INDEX) == 0)
		return MANIFEST_INDEX;
	return -1;
}

static bool is_schema1(const char *type)
{
	return strcasecmp(type, T_SCHEMA1) == 0 || strcasecmp(type, T_SCHEMA1_SIGNED) == 0;
}

/* A Content-Type that says nothing about the body: the body decides. */
static bool is_generic(const char *type)
{
	return type[0] == '\0' || strcasecmp(type, "application/json") == 0 ||
	       strcasecmp(type, "text/plain") == 0 ||
	       strcasecmp(type, "application/octet-stream") == 0 ||
	       strcasecmp(type, "binary/octet-stream") == 0;
}

/* The media type of a Content-Type value, without parameters or blanks. */
static void content_type_of(const char *value, char *out, size_t size)
{
	size_t start = 0, end;

	if (value == NULL)
		value = "";
	start = strspn(value, " \t");
	end = start + strcspn(value + start, ";");
	while (end > start && (value[end - 1] == ' ' || value[end - 1] == '\t'))
		end--;
	/* Longer than any type we know: keep a prefix, which matches nothing. */
	snprintf(out, size, "%.*s", (int)(end - start), value + start);
}

static const char *const layer_types[] = {
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.diff.tar",
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
};

static const char *const foreign_types[] = {
	"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.foreign.diff.tar",
	"application/vnd.oci.image.layer.nondistributable.v1.tar",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
};

static const char *const config_types[] = {
	"application/vnd.docker.container.image.v1+json",
	"application/vnd.oci.image.config.v1+json",
};

static bool in(const char *type, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(type, list[i]) == 0)
			return true;
	return false;
}
#define IN(type, list) in(type, list, sizeof(list) / sizeof(*list))

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

enum layer_compression layer_compression_of(const char *media_type)
{
	if (ends_with(media_type, "+gzip") || ends_with(media_type, ".tar.gzip"))
		return LAYER_GZIP;
	if (ends_with(media_type, "+zstd"))
		return LAYER_ZSTD;
	return LAYER_TAR;
}

static bool is_sha256(const char *digest)
{
	return strncmp(digest, "sha256:", 7) == 0 && strlen(digest + 7) == 64 &&
	       strspn(digest + 7, "0123456789abcdef") == 64;
}

/* One descriptor: `where` ("config", "layers[3]", "manifests[0]") names it
 * in errors.  Index entries (platform true) also read their platform; their
 * mediaType may be absent (pick skips them). */
static int descriptor(json_object *d, const char *where, bool platform, const char *what,
		      struct descriptor *out, struct err *e)
{
	char ctx[512], digest[256];
	json_object *size, *plat;
	int r;

	snprintf(ctx, sizeof(ctx), "%s: %s", what, where);
	if (!json_object_is_type(d, json_type_object))
		return err_set(e, EXIT_CTRUN, "%s is not an object", ctx);
	r = jsonbody_string(d, "mediaType", out->media_type, sizeof(out->media_type), EXIT_CTRUN,
			    ctx, e);
	if (r < 0)
		return -1;
	if (r == 0 && !platform)
		return err_set(e, EXIT_CTRUN, "%s has no mediaType", ctx);
	r = jsonbody_string(d, "digest", digest, sizeof(digest), EXIT_CTRUN, ctx, e);
	if (r < 0)
		return -1;
	if (r == 0 || !is_sha256(digest))
		return err_set(e, EXIT_CTRUN, "%s: the digest is not sha256:<64 lowercase hex> "
			       "(only sha256 is supported)", ctx);
	memcpy(out->digest, digest, strlen(digest) + 1);
	size = jsonbody_get(d, "size", json_type_int);
	if (size == NULL)
		return err_set(e, EXIT_CTRUN, "%s has no integer size", ctx);
	out->size = json_object_get_int64(size);
	if (out->size < 0 || out->size > LAYER_SIZE_MAX)
		return err_set(e, EXIT_CTRUN, "%s: size %lld is out of range (0 to 1 TiB)", ctx,
			       out->size);
	if (!platform || !json_object_object_get_ex(d, "platform", &plat) ||
	    json_object_is_type(plat, json_type_null))
		return 0;
	if (!json_object_is_type(plat, json_type_object))
		return err_set(e, EXIT_CTRUN, "%s: platform is not an object", ctx);
	snprintf(ctx + strlen(ctx), sizeof(ctx) - strlen(ctx), ".platform");
	if (jsonbody_string(plat, "os", out->os, sizeof(out->os), EXIT_CTRUN, ctx, e) < 0 ||
	    jsonbody_string(plat, "architecture", out->arch, sizeof(out->arch), EXIT_CTRUN, ctx,
			    e) < 0 ||
	    jsonbody_string(plat, "variant", out->variant, sizeof(out->variant), EXIT_CTRUN, ctx,
			    e) < 0)
		return -1;
	return 0;
}

/* The array member key of o with at most max elements, into a new array of
 * descriptors. */
static int descriptors(json_object *o, const char *key, size_t max, bool platform,
		       const char *what, struct descriptor **out, size_t *n, struct err *e)
{
	json_object *a = jsonbody_get(o, key, json_type_array);
	size_t len;

	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "%s: %s is not a list", what, key);
	len = json_object_array_length(a);
	if (len > max)
		return err_set(e, EXIT_CTRUN, "%s has %zu %s, more than the %zu ctrun accepts", what,
			       len, key, max);
	*out = calloc(len > 0 ? len : 1, sizeof(**out));
	if (*out == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	for (*n = 0; *n < len; (*n)++) {
		char where[64];

		snprintf(where, sizeof(where), "%s[%zu]", key, *n);
		if (descriptor(json_object_array_get_idx(a, *n), where, platform, what,
			       &(*out)[*n], e) < 0)
			return -1;
	}
	return 0;
}

static int parse_image(json_object *o, const char *what, struct manifest *m, struct err *e)
{
	json_object *config;

	if (!json_object_object_get_ex(o, "config", &config))
		return err_set(e, EXIT_CTRUN, "%s: the manifest has no config", what);
	if (descriptor(config, "config", false, what, &m->config, e) < 0)
		return -1;
	if (!IN(m->config.media_type, config_types))
		return err_set(e, EXIT_CTRUN, "%s is not a container image (config media type %s)",
			       what, m->config.media_type);
	if (descriptors(o, "layers", MANIFEST_LAYERS_MAX, false, what, &m->layers, &m->nlayers,
			e) < 0)
		return -1;
	for (size_t i = 0; i < m->nlayers; i++) {
		const struct descriptor *l = &m->layers[i];

		if (IN(l->media_type, foreign_types))
			return err_set(e, EXIT_CTRUN, "%s: foreign layer %s not supported (layers[%zu], "
				       "%s: a nondistributable layer is not served by the "
				       "registry)", what, l->digest, i, l->media_type);
		if (!IN(l->media_type, layer_types))
			return err_set(e, EXIT_CTRUN, "%s: layers[%zu] has media type %s, which is "
				       "not a tar, tar+gzip or tar+zstd image layer", what, i,
				       l->media_type);
	}
	return 0;
}

/* The media type of the body: Content-Type when it is specific (the body's
 * own mediaType must then agree), else the body's mediaType, else OCI's
 * shape ("manifests" or "layers"). */
static int body_type(json_object *o, const char *content_type, const char *what, char *type,
		     size_t size, struct err *e)
{
	char ct[128], own[128] = "";
	json_object *version;
	int r;

	content_type_of(content_type, ct, sizeof(ct));
	if (is_schema1(ct))
		return err_set(e, EXIT_CTRUN, "%s: %s", what, schema1_msg);
	r = jsonbody_string(o, "mediaType", own, sizeof(own), EXIT_CTRUN, what, e);
	if (r < 0)
		return -1;
	version = jsonbody_get(o, "schemaVersion", json_type_int);
	if (is_schema1(own) || (version != NULL && json_object_get_int64(version) == 1) ||
	    json_object_object_get_ex(o, "fsLayers", NULL))
		return err_set(e, EXIT_CTRUN, "%s: %s", what, schema1_msg);
	if (version == NULL || json_object_get_int64(version) != 2)
		return err_set(e, EXIT_CTRUN, "%s: schemaVersion is not 2", what);
	if (!is_generic(ct)) {
		if (kind_of(ct) < 0)
			return err_set(e, EXIT_CTRUN, "%s: unsupported manifest type %s (ctrun reads "
				       "docker v2 schema 2 and OCI manifests and indexes)", what, ct);
		if (r > 0 && strcasecmp(own, ct) != 0)
			return err_set(e, EXIT_CTRUN, "%s: served as %s but its mediaType is %s", what,
				       ct, own);
		snprintf(type, size, "%s", ct);
	} else if (r > 0) {
		if (kind_of(own) < 0)
			return err_set(e, EXIT_CTRUN, "%s: unsupported manifest type %s (ctrun reads "
				       "docker v2 schema 2 and OCI manifests and indexes)", what, own);
		snprintf(type, size, "%s", own);
	} else {
		bool index = json_object_object_get_ex(o, "manifests", NULL),
		     image = json_object_object_get_ex(o, "layers", NULL);

		if (index == image)
			return err_set(e, EXIT_CTRUN, "%s: neither an image manifest nor an index "
				       "(no mediaType, and %s)", what,
				       index ? "both layers and manifests" : "no layers or manifests");
		snprintf(type, size, "%s", index ? T_OCI_INDEX : T_OCI_MANIFEST);
	}
	/* The canonical spelling, whatever the case the registry sent. */
	for (size_t i = 0; type[i] != '\0'; i++)
		if (type[i] >= 'A' && type[i] <= 'Z')
			type[i] = (char)(type[i] - 'A' + 'a');
	return 0;
}

int manifest_parse(const char *body, size_t len, const char *content_type, const char *what,
		   struct manifest *m, struct err *e)
{
	json_object *o;
	int rv = -1;

	memset(m, 0, sizeof(*m));
	o = jsonbody_parse(body, len, MANIFEST_MAX, EXIT_CTRUN, what, e);
	if (o == NULL)
		return -1;
	if (body_type(o, content_type, what, m->media_type, sizeof(m->media_type), e) < 0)
		goto out;
	m->kind = kind_of(m->media_type) == MANIFEST_INDEX ? MANIFEST_INDEX : MANIFEST_IMAGE;
	if (m->kind == MANIFEST_IMAGE)
		rv = parse_image(o, what, m, e);
	else
		rv = descriptors(o, "manifests", INDEX_ENTRIES_MAX, true, what, &m->entries,
				 &m->nentries, e);
out:
	json_object_put(o);
	if (rv < 0)
		manifest_free(m);
	return rv;
}

void platform_from_machine(const char *machine, char *arch, size_t asize, char *variant,
			   size_t vsize)
{
	static const struct {
		const char *machine, *arch, *variant;
		bool prefix;
	} map[] = {
		{ "x86_64", "amd64", "", false },   { "amd64", "amd64", "", false },
		{ "aarch64", "arm64", "v8", false }, { "arm64", "arm64", "v8", false },
		{ "armv8", "arm64", "v8", true },   { "armv7", "arm", "v7", true },
		{ "armv6", "arm", "v6", true },     { "armv5", "arm", "v5", true },
		{ "i386", "386", "", false },       { "i486", "386", "", false },
		{ "i586", "386", "", false },       { "i686", "386", "", false },
		{ "ppc64le", "ppc64le", "", false }, { "ppc64", "ppc64", "", false },
		{ "s390x", "s390x", "", false },    { "riscv64", "riscv64", "", false },
		{ "loongarch64", "loong64", "", false },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++) {
		if (map[i].prefix ? strncmp(machine, map[i].machine, strlen(map[i].machine)) == 0
				  : strcmp(machine, map[i].machine) == 0) {
			snprintf(arch, asize, "%s", map[i].arch);
			snprintf(variant, vsize, "%s", map[i].variant);
			return;
		}
	}
	snprintf(arch, asize, "%s", machine);
	snprintf(variant, vsize, "%s", "");
}

/* How well an index entry fits linux/arch/variant: 0 not, 1 an entry
 * without a variant, 2 the variant itself (arm64 counts no variant as v8). */
static int fit(const struct descriptor *d, const char *arch, const char *variant)
{
	const char *want = variant, *have = d->variant;

	if (kind_of(d->media_type) != MANIFEST_IMAGE || strcmp(d->os, "linux") != 0 ||
	    strcmp(d->arch, arch) != 0)
		return 0;
	if (strcmp(arch, "arm64") == 0) {
		want = want[0] == '\0' ? "v8" : want;
		have = have[0] == '\0' ? "v8" : have;
	}
	if (strcmp(want, have) == 0)
		return 2;
	return d->variant[0] == '\0' ? 1 : 0;
}

/* An entry the error message names: an image with a platform other than
 * buildx's attestations' unknown/unknown. */
static bool listed(const struct descriptor *d)
{
	return kind_of(d->media_type) == MANIFEST_IMAGE && d->os[0] != '\0' &&
	       strcmp(d->os, "unknown") != 0;
}

int manifest_pick(const struct manifest *m, const char *arch, const char *variant,
		  const char *what, const struct descriptor **out, struct err *e)
{
	const struct descriptor *best = NULL;
	int best_fit = 0;
	char have[512] = "";
	size_t used = 0;

	*out = NULL;
	if (m->kind != MANIFEST_INDEX)
		return err_set(e, EXIT_CTRUN, "%s is an image, not an index", what);
	for (size_t i = 0; i < m->nentries; i++) {
		int f = fit(&m->entries[i], arch, variant);

		if (f > best_fit) {
			best = &m->entries[i];
			best_fit = f;
		}
	}
	if (best != NULL) {
		*out = best;
		return 0;
	}
	/* The platforms there are, once each (attestations, os "unknown", left out). */
	for (size_t i = 0; i < m->nentries && used + 8 < sizeof(have); i++) {
		const struct descriptor *d = &m->entries[i];
		bool seen = false;

		if (!listed(d))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = listed(&m->entries[j]) && strcmp(d->os, m->entries[j].os) == 0 &&
			       strcmp(d->arch, m->entries[j].arch) == 0 &&
			       strcmp(d->variant, m->entries[j].variant) == 0;
		if (seen)
			continue;
		if (used + strlen(d->os) + strlen(d->arch) + strlen(d->variant) + 16 >= sizeof(have)) {
			snprintf(have + used, sizeof(have) - used, ", ...");
			break;
		}
		used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%s/%s%s%s",
					 used > 0 ? ", " : "", d->os, d->arch,
					 d->variant[0] != '\0' ? "/" : "", d->variant);
	}
	return err_set(e, EXIT_CTRUN, "no linux/%s%s%s image in %s; %s%s", arch,
		       variant[0] ? "/" : "", variant, what,
		       used > 0 ? "it has " : "it lists no platform", have);
}

void manifest_free(struct manifest *m)
{
	free(m->layers);
	free(m->entries);
	m->layers = NULL;
	m->entries = NULL;
	m->nlayers = 0;
	m->nentries = 0;
}
