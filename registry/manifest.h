/* manifest.h - image manifests and indexes (Docker v2 schema 2, OCI):
 * parsed from bytes (json-c), checked, and the node's platform picked from
 * an index.  Pure: no I/O, so they are unit tested and fuzzed alone.
 * A hostile registry is normal: the body is bounded (MANIFEST_MAX), as are
 * the number of layers and of index entries. */
#ifndef CTRUN_MANIFEST_H
#define CTRUN_MANIFEST_H

#include <stddef.h>

#include "err.h"

#define MANIFEST_MAX (4u << 20)  /* bytes of a manifest or index */
#define MANIFEST_LAYERS_MAX 1000 /* as images/unpack/archive.c's LAYERS_MAX */
#define INDEX_ENTRIES_MAX 1000

/* The Accept header of a manifest request: the four types below. */
#define MANIFEST_ACCEPT                                              \
	"application/vnd.oci.image.index.v1+json, "                   \
	"application/vnd.docker.distribution.manifest.list.v2+json, " \
	"application/vnd.oci.image.manifest.v1+json, "                \
	"application/vnd.docker.distribution.manifest.v2+json"

struct descriptor {
	char media_type[128]; /* index entries: "" when the entry has none */
	char digest[80]; /* sha256:<64 lowercase hex> (only sha256 is accepted) */
	long long size;  /* 0 to 1 TiB */
	/* Index entries only ("" otherwise): */
	char os[32], arch[32], variant[32];
};

enum manifest_kind { MANIFEST_IMAGE, MANIFEST_INDEX };

enum layer_compression { LAYER_TAR, LAYER_GZIP, LAYER_ZSTD };

struct manifest {
	enum manifest_kind kind;
	char media_type[128];
	struct descriptor config;  /* MANIFEST_IMAGE */
	struct descriptor *layers; /* MANIFEST_IMAGE, bottom first */
	size_t nlayers;
	struct descriptor *entries; /* MANIFEST_INDEX */
	size_t nentries;
};

/* Pure: parses body (len bytes; not NUL-terminated) whose HTTP
 * Content-Type was content_type (parameters ignored; NULL, "" or a generic
 * type, application/json, text/plain or octet-stream, when the registry
 * said nothing useful: the body's own mediaType decides, and without one
 * an OCI body's "manifests" or "layers").  A specific Content-Type and the
 * body's mediaType must agree.  Accepts the four media types of
 * MANIFEST_ACCEPT with schemaVersion 2; refuses by name schema 1, and an
 * image whose config is not a container image config (an artifact, a helm
 * chart: "WHAT is not a container image (config media type X)").  `what`
 * names it in errors (EXIT_CTRUN).  Every layer's media type must be a tar,
 * tar+gzip or tar+zstd layer (docker's or OCI's); a foreign/nondistributable
 * layer is refused by name ("foreign layer DIGEST not supported"). */
int manifest_parse(const char *body, size_t len, const char *content_type, const char *what,
		   struct manifest *m, struct err *e);

/* Pure: the compression of a layer from its media type. */
enum layer_compression layer_compression_of(const char *media_type);

/* Pure: the host's platform as an index names it: uname's machine
 * (x86_64, aarch64, armv7l, ppc64le, s390x, riscv64 ...) into arch
 * (amd64, arm64, arm, ppc64le, s390x, riscv64) and variant (arm64: "v8",
 * arm: "v7", else ""). */
void platform_from_machine(const char *machine, char *arch, size_t asize, char *variant,
			   size_t vsize);

/* Pure: the entry of index m for linux/arch[/variant]: an image manifest
 * (docker's or OCI's media type; buildx's attestations, os "unknown", never
 * fit) whose variant is the one asked for (with arm64, "v8" and none are
 * the same), else the first without a variant.  No fit, or m is not an
 * index: EXIT_CTRUN with the platforms the index has ("no linux/arm64/v8
 * image in REF; it has linux/amd64, linux/ppc64le"). */
int manifest_pick(const struct manifest *m, const char *arch, const char *variant,
		  const char *what, const struct descriptor **out, struct err *e);

void manifest_free(struct manifest *m);

#endif
