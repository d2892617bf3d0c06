/* registry.h - images from registries: what the rest of ctrun calls.
 *
 * A reference (ref.h) is pulled into the image store: the image becomes a
 * squashfs keyed by its manifest digest, published by rename, so
 * everything ctrun does with a .sqsh (mounting, the node cache, staging,
 * enroot and apptainer) works on it unchanged.  Layout under the store
 * (docs/images.md, "Registries"):
 *   images/sha256-<hex>.sqsh     an image, by the digest of its (platform) manifest
 *   refs/<host>/<repo>/<tag>     the digest a tag had when it was last pulled
 *   refs/<host>/<repo>/@sha256-<hex>  an index digest: the platform manifest chosen
 *   blobs/sha256/<hex>           layers and configs, verified (shared by all images)
 *   jobs/<job>.<step>-<hash>     the digest a job step's task 0 resolved (claim.h)
 *   tmp/                         downloads and unpacks under way (name.host.pid)
 * Whom a store is trusted from, and why nothing found in it is used
 * unchecked: store.h (store_trust), blobs.h; docs/images.md, "Who may
 * write the store".
 */
#ifndef CTRUN_REGISTRY_H
#define CTRUN_REGISTRY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

struct job_record;

struct registry_cfg {
	const char *store;               /* NULL: registry_default_store */
	const char *ca_file;             /* a CA bundle added to the system's; NULL = none */
	const char *auth_file;           /* an auth.json looked in first; NULL = none */
	const struct strv *plain_http;   /* hosts spoken to over http:// */
	const struct strv *insecure_tls; /* hosts whose certificate is not checked */
	const struct strv *mirrors;      /* HOST=MIRROR (host[:port][/prefix]) tried first */
	long parallel;                   /* blob downloads at once; 0 = 4 */
	unsigned long long max_unpacked; /* bound on an image's unpacked bytes; 0 = none */
	unsigned long long max_tree;     /* bound on its tree's memory in a pull; 0 = none */
	long verbose;
	bool quiet, progress;
	char *const *envp;               /* credentials' $VAR, HOME, XDG_* */
	long wait_s;                     /* bound on waiting for another puller; 0 = 1800 */
	const char *compression;         /* the squashfs's compressor (sqimage_comp_parse);
					  * NULL: SQ_COMP_PULL */
	bool no_reuse;                   /* never build on a stored image (reuse.h) */
	/* One digest per job step (claim.h): the step's record, and whether
	 * this is its task 0 (a node-local store: the node's first task),
	 * which resolves the tag (NULL: none). */
	const struct job_record *job;
	bool job_leader;
};

struct pulled {
	char sqsh[PATH_MAX];  /* the image in the store */
	char digest[80];      /* its manifest digest */
	char ref[600];        /* HOST/REPO:TAG as resolved */
	bool offline;         /* the registry could not be reached: the store's record was used */
	bool fresh;           /* downloaded now (not found in the store) */
};

/* The store: $XDG_CACHE_HOME/ctrun/images, else $HOME/.cache/ctrun/images. */
int registry_default_store(char *const *envp, char *out, size_t size, struct err *e);

/* Pulls `reference` (docker://... or HOST#REPO) into the store unless it
 * is there at the digest the registry names now.  When the registry
 * cannot be reached (no route, DNS, refused) and the store has the tag
 * from an earlier pull, that image is used and one line says so (unless
 * quiet).  A reference pinned by digest that the store holds needs no
 * network at all. */
int registry_pull(const struct registry_cfg *c, const char *reference, struct pulled *p,
		  struct err *e);

/* Uses only the store: the image of a reference pinned to `digest`
 * (another ctrun of the job resolved it), 1 found, 0 not. */
int registry_lookup_digest(const struct registry_cfg *c, const char *digest, struct pulled *p,
			   struct err *e);

#endif
