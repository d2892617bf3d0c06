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
#define MANIFEST_LAYERS_MAX 1000 /* as images/archive.c's LAYERS_MAX */
#define INDEX_ENTRIES_MAX 1000

/* The Accept header of a manifest request: the four types below. */
#define MANIFEST_ACCEPT                                              \
	"application/vnd.oci.image.index.v1+json, "                   \
	"application/vnd.docker.distribution.manifest.list.v2+json, " \
	"application/vnd.oci.image.manifest.v1+json, "                \
	"application/vnd.docker.distribution.manifest.v2+json"

struct descriptor {
	char media_type[128];
	char digest[80]; /* sha256:<64 hex> (only sha256 is accepted) */
	long long size;  /* >= 0 */
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
 * Content-Type was content_type (NULL or "" when the registry sent none:
 * the body's own mediaType decides).  Accepts the four media types of
 * MANIFEST_ACCEPT; refuses by name schema 1, and an image whose config is
 * not a container image config (an artifact, a helm chart: "REF is not a
 * container image (config type X)").  `what` names it in errors.  Every
 * layer's media type must be a tar, tar+gzip or tar+zstd layer (docker's
 * or OCI's); a foreign/nondistributable layer is refused by name. */
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

/* Pure: the entry of index m for linux/arch[/variant] (an entry without a
 * variant fits any; with arm64 an entry "v8" or none).  No fit: EXIT_CTRUN
 * with the platforms the index has ("no linux/arm64 image in REF; it has
 * linux/amd64, linux/ppc64le"). */
int manifest_pick(const struct manifest *m, const char *arch, const char *variant,
		  const char *what, const struct descriptor **out, struct err *e);

void manifest_free(struct manifest *m);

#endif
