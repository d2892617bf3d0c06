/* resolve.c - --image docker://REF made a path in the image store before
 * anything else looks at it (deliver.h).
 *
 * In a batch script the batch-mode ctrun pulls once and hands the digest
 * to the steps it starts (CTRUN_IMAGE_PULLED="DIGEST REFERENCE"): a step's
 * ctrun with the same reference uses that digest from the store, so the
 * nodes of a job never ask the registry again, and a tag moved meanwhile
 * cannot give two nodes two images. */
#include "deliver.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "phase.h"
#include "ref.h"
#include "claim.h"
#include "feed_step.h"
#include "stage.h"
#include "unpack/unpack.h"
#include "util.h"

#define PULLED_ENV "CTRUN_IMAGE_PULLED"

extern char **environ;

/* One digest per job step: in a step (not a batch script's ctrun, which
 * hands its digest on itself), task 0 resolves and the others follow its
 * record (registry/claim.h).  With a store each node has for itself, the
 * tasks of one node share it: the node's first task resolves for them, in
 * a record of that node's (issue 33). */
static bool job_of(const struct options *o, struct registry_cfg *c, struct job_record *rec)
{
	const char *procid = getenv("SLURM_PROCID"), *localid = getenv("SLURM_LOCALID");
	const char *mode = o->reg_store_shared, *node = getenv("SLURMD_NODENAME");
	struct job_run run = {
		.cluster = getenv("SLURM_CLUSTER_NAME"), .job = getenv("SLURM_JOB_ID"),
		.step = getenv("SLURM_STEP_ID"), .restart = getenv("SLURM_RESTART_COUNT"),
		.start = getenv("SLURM_JOB_START_TIME"),
	};
	char store[PATH_MAX], host[64];
	struct err e = { 0 };
	bool shared;

	if (run.job == NULL || run.step == NULL || procid == NULL || o->image == NULL)
		return false;
	if (mode == NULL || strcmp(mode, "auto") == 0)
		shared = image_store_dir(o, store, sizeof(store), &e) == 0 &&
			 stage_on_network_fs(store);
	else
		shared = strcmp(mode, "true") == 0;
	if (!shared) {
		if (node == NULL || node[0] == '\0') {
			if (gethostname(host, sizeof(host) - 1) < 0)
				return false;
			host[sizeof(host) - 1] = '\0';
			host[strcspn(host, ".")] = '\0';
			node = host;
		}
		if (localid == NULL)
			return false;
		run.node = node;
	}
	if (job_record_of(&run, o->image, rec) < 0)
		return false;
	c->job = rec;
	c->job_leader = strcmp(shared ? procid : localid, "0") == 0;
	/* A node-local store's node leader: the step's nodes feed each other. */
	return !shared && c->job_leader;
}

void image_registry_cfg(const struct options *o, struct registry_cfg *c)
{
	const char *p = o->cache_progress != NULL ? o->cache_progress : "auto";

	memset(c, 0, sizeof(*c));
	c->store = o->reg_store;
	c->ca_file = o->reg_ca_file;
	c->auth_file = o->reg_auth_file;
	c->plain_http = &o->reg_plain_http;
	c->insecure_tls = &o->reg_insecure_tls;
	c->mirrors = &o->reg_mirrors;
	c->parallel = o->reg_parallel;
	c->max_unpacked = o->cache_max_unpacked;
	c->max_tree = o->reg_max_tree;
	c->verbose = o->verbose;
	c->quiet = o->quiet;
	c->progress = !o->quiet && (strcmp(p, "true") == 0 ||
				    (strcmp(p, "auto") == 0 && isatty(STDERR_FILENO)));
	c->envp = environ;
	c->wait_s = o->reg_wait;
	c->compression = o->reg_compression;
	c->no_reuse = o->reg_reuse != NULL && strcmp(o->reg_reuse, "false") == 0;
}

int image_store_dir(const struct options *o, char *out, size_t size, struct err *e)
{
	if (o->reg_store != NULL)
		return xsnprintf(out, size, "%s", o->reg_store) < 0
			       ? err_set(e, EXIT_USAGE, "[registry] store too long") : 0;
	return registry_default_store(environ, out, size, e);
}

/* The reference image pinned to digest: docker://HOST/REPO@DIGEST. */
static int pinned_of(const char *image, const char *digest, char *pinned, size_t size,
		     struct err *e)
{
	struct image_ref ref;
	char name[600];

	if (ref_parse(image, &ref, e) < 0)
		return -1;
	snprintf(ref.digest, sizeof(ref.digest), "%s", digest);
	ref.tag[0] = '\0';
	if (ref_format(&ref, name, sizeof(name)) < 0 ||
	    xsnprintf(pinned, size, "docker://%s", name) < 0)
		return err_set(e, EXIT_CTRUN, "%s: reference too long", image);
	return 0;
}

/* The reference image pinned to digest, pulled from the registry. */
static int pull_pinned(const struct registry_cfg *c, const char *image, const char *digest,
		       struct pulled *p, struct err *e)
{
	char pinned[700];

	return pinned_of(image, digest, pinned, sizeof(pinned), e) < 0
		       ? -1 : registry_pull(c, pinned, p, e);
}

/* A node-local store's node leader in a step on several nodes: node 0
 * pulls, the others take the image from the step's nodes (feed_step.h),
 * or pull for themselves when that fails. */
static int pull_or_feed(const struct options *o, const struct registry_cfg *c, const char *image,
			struct pulled *p, struct err *e)
{
	char store[PATH_MAX], digest[80];
	struct feed_step f;
	int r;

	if (image_store_dir(o, store, sizeof(store), e) < 0)
		return -1;
	/* A site that must not send image bytes in clear between nodes. */
	if (o->reg_feed != NULL && strcmp(o->reg_feed, "off") == 0) {
		if (o->verbose > 0)
			fprintf(stderr, "ctrun: no image feed between the step's nodes ([registry] "
				"feed = off): each node pulls for itself\n");
		return registry_pull(c, image, p, e);
	}
	if (feed_step_of(environ, o->verbose, &f) != 1)
		return registry_pull(c, image, p, e);
	r = feed_image(&f, c, store, image, p, digest, sizeof(digest), e);
	if (r != 1)
		return r;
	return digest[0] != '\0' ? pull_pinned(c, image, digest, p, e)
				 : registry_pull(c, image, p, e);
}

/* A missing file written like a registry name: say how to pull it. */
static int not_found(const char *image, struct err *e)
{
	bool looks = image[0] != '/' && image[0] != '.' && strchr(image, '/') != NULL &&
		     strchr(image, ':') != NULL;
	bool bare = image[0] != '/' && image[0] != '.' && strchr(image, '/') == NULL &&
		    strchr(image, ':') != NULL && strchr(image, '.') == NULL;

	if (looks || bare)
		return err_set(e, EXIT_CTRUN, "image %s: no such file; to pull it from a registry "
			       "write docker://%s", image, image);
	return 0;
}

/* A pulled image Singularity and apptainer < 1.4 cannot read (images.md,
 * "Compression"): said before they say "unknown compression algorithm". */
static void zstd_warning(const struct options *o, const char *image, const char *sqsh)
{
	struct err e2 = { 0 };

	if (o->quiet || o->runtime == NULL ||
	    (strcmp(o->runtime, "apptainer") != 0 && strcmp(o->runtime, "singularity") != 0) ||
	    squashfs_compressor(sqsh, 0, &e2) != 6)
		return;
	fprintf(stderr, "ctrun: warning: %s was stored zstd-compressed ([registry] compression), "
		"which Singularity and apptainer before 1.4 cannot read: set [registry] compression "
		"= lz4 and pull it again (ctrun cache remove %s)\n", image, image);
}

int image_resolve_one(const struct options *o, const char *image, char **path, struct err *e)
{
	const char *handed = getenv(PULLED_ENV), *sp;
	struct registry_cfg c;
	struct pulled p;
	struct stat st;

	*path = NULL;
	/* A reference is always a reference (ref.h): never a file of its name
	 * in the working directory, which another user may have made. */
	if (!ref_is_reference(image))
		return stat(image, &st) < 0 && errno == ENOENT ? not_found(image, e) : 0;
	image_registry_cfg(o, &c);
	/* The batch step's pull, by digest. */
	sp = handed != NULL ? strchr(handed, ' ') : NULL;
	if (sp != NULL && strcmp(sp + 1, image) == 0) {
		struct registry_cfg cj = c;
		struct job_record rec;
		char digest[80];
		int r;

		if (xsnprintf(digest, sizeof(digest), "%.*s", (int)(sp - handed), handed) < 0)
			return err_set(e, EXIT_CTRUN, "%s: not a digest", PULLED_ENV);
		/* Node-local stores: the batch node's digest, fed from the step's
		 * node 0 (the batch node, which has it) to the others. */
		if (image == o->image && job_of(o, &cj, &rec)) {
			char pinned[700];

			if (pinned_of(image, digest, pinned, sizeof(pinned), e) < 0 ||
			    pull_or_feed(o, &cj, pinned, &p, e) < 0)
				return -1;
		} else {
			r = registry_lookup_digest(&c, digest, &p, e);
			if (r < 0)
				return -1;
			/* Not in this node's store: pull that very digest. */
			if (r == 0 && pull_pinned(&c, image, digest, &p, e) < 0)
				return -1;
		}
	} else {
		struct job_record rec;
		char line[800];
		bool feed = image == o->image && job_of(o, &c, &rec);

		if ((feed ? pull_or_feed(o, &c, image, &p, e) : registry_pull(&c, image, &p, e)) < 0)
			return -1;
		if (xsnprintf(line, sizeof(line), "%s %s", p.digest, image) >= 0)
			setenv(PULLED_ENV, line, 1);
	}
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: image %s is %s\n", image, p.sqsh);
	zstd_warning(o, image, p.sqsh);
	*path = strdup(p.sqsh);
	return *path == NULL ? err_sys(e, EXIT_CTRUN, "image") : 0;
}

int image_resolve(struct options *o, struct err *e)
{
	char *path;

	if (o->image == NULL || image_resolve_one(o, o->image, &path, e) < 0)
		return o->image == NULL ? 0 : -1;
	if (path != NULL) {
		phase_mark("pull");
		free(o->image);
		o->image = path;
	}
	return 0;
}
