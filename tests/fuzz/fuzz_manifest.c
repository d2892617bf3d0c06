/* fuzz_manifest.c - libFuzzer target for registry manifests and indexes
 * (registry/manifest.c): the first byte picks the Content-Type, the rest is
 * the body, handed over by its length (no NUL after it).  Whatever is
 * accepted keeps the promises the puller relies on: sha256 digests, sizes
 * in 0..1 TiB, known layer and config media types, the bounds; a picked
 * entry is a linux image manifest of the asked architecture; every error is
 * one line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const content_types[] = {
	NULL,
	"",
	"application/json",
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json; charset=utf-8",
	"application/vnd.docker.distribution.manifest.v1+prettyjws",
};

static void check_descriptor(const struct descriptor *d)
{
	if (strncmp(d->digest, "sha256:", 7) != 0 || strlen(d->digest) != 71 ||
	    strspn(d->digest + 7, "0123456789abcdef") != 64 || d->size < 0 ||
	    d->size > (1LL << 40))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const platforms[][2] = {
		{ "amd64", "" }, { "arm64", "v8" }, { "arm64", "" }, { "arm", "v7" },
	};
	struct manifest m;
	struct err e = { 0 };
	/* The body alone in its own allocation: ASan sees a read past its end. */
	size_t len = size > 0 ? size - 1 : 0;
	char *body = malloc(len > 0 ? len : 1);

	if (size == 0) {
		free(body);
		return 0;
	}
	memcpy(body, data + 1, len);
	if (manifest_parse(body, len, content_types[data[0] % 8], "img", &m, &e) < 0) {
		if (strchr(e.msg, '\n') != NULL || m.layers != NULL || m.entries != NULL)
			abort();
		free(body);
		return 0;
	}
	if (m.kind == MANIFEST_IMAGE) {
		if (m.nlayers > MANIFEST_LAYERS_MAX || m.entries != NULL)
			abort();
		check_descriptor(&m.config);
		for (size_t i = 0; i < m.nlayers; i++) {
			check_descriptor(&m.layers[i]);
			if (strstr(m.layers[i].media_type, "foreign") != NULL ||
			    strstr(m.layers[i].media_type, "nondistributable") != NULL)
				abort();
		}
	} else {
		if (m.nentries > INDEX_ENTRIES_MAX || m.layers != NULL)
			abort();
		for (size_t i = 0; i < m.nentries; i++)
			check_descriptor(&m.entries[i]);
	}
	for (size_t i = 0; i < sizeof(platforms) / sizeof(*platforms); i++) {
		const struct descriptor *d = NULL;

		if (manifest_pick(&m, platforms[i][0], platforms[i][1], "img", &d, &e) == 0) {
			if (d < m.entries || d >= m.entries + m.nentries ||
			    strcmp(d->os, "linux") != 0 || strcmp(d->arch, platforms[i][0]) != 0)
				abort();
		} else if (d != NULL || strchr(e.msg, '\n') != NULL) {
			abort();
		}
	}
	manifest_free(&m);
	free(body);
	return 0;
}
