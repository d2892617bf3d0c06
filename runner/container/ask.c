/* ask.c - the request (rt.h struct ctr_ask): what the user asked of the
 * container, from the options, made once at the start of a run; the one
 * place of runner/container/ that reads the options for the phases (the
 * agent's spec reads the launch's own, run.c).  And the node cache's
 * settings from the [cache] options, which `ctrun cache` and `ctrun save`
 * use too. */
#include "container.h"

#include <string.h>
#include <unistd.h>

#include "util.h"

int ctr_cache_cfg(const struct options *o, struct cache_cfg *c, char *dirbuf, size_t size,
		  struct err *e)
{
	memset(c, 0, sizeof(*c));
	if (o->cache_dir != NULL) {
		if (xsnprintf(dirbuf, size, "%s", o->cache_dir) < 0)
			return err_set(e, EXIT_USAGE, "[cache] dir too long");
	} else if (cache_default_dir(dirbuf, size, e) < 0) {
		return -1;
	}
	c->dir = dirbuf;
	c->lookup = o->cache_shared;
	c->budget_bytes = o->cache_budget;
	c->max_unpacked = o->cache_max_unpacked;
	c->quiet = o->quiet;
	if (o->cache_progress == NULL || strcmp(o->cache_progress, "auto") == 0)
		c->progress = isatty(STDERR_FILENO) && !o->quiet;
	else
		c->progress = strcmp(o->cache_progress, "true") == 0;
	return 0;
}

/* "auto", "mount", "unpack" (NULL: auto); the options parser checked it. */
static enum ctr_image_mode image_mode(const char *name)
{
	if (name != NULL && strcmp(name, "mount") == 0)
		return IMAGE_MODE_MOUNT;
	if (name != NULL && strcmp(name, "unpack") == 0)
		return IMAGE_MODE_UNPACK;
	return IMAGE_MODE_AUTO;
}

void ctr_ask_init(struct ctr_setup *c, const struct options *o, const struct topo *t,
		  char *const *envp, bool agent)
{
	struct ctr_ask *a = &c->ask;

	*a = (struct ctr_ask){
		.envp = envp, .image = o->image, .runtime = o->runtime,
		.start_fast = o->start_fast, .home_env = o->home_env,
		.image_mode = image_mode(o->image_mode), .mounts = &o->mounts,
		.workdir = o->workdir, .log_dir = o->log_dir, .stage = o->stage,
		.nv = o->nv != NULL ? o->nv : "auto", .gpu_isolation = o->gpu_isolation,
		.name = o->name, .name_reset = o->name_reset, .save = o->save,
		.unshare = o->unshare, .devices = &o->devices, .cdi_spec_dirs = o->cdi_spec_dirs,
		.gpu_source = o->gpu_source != NULL ? o->gpu_source : "auto",
		/* --save: node rank 0's first task saves (run.c). */
		.saves = o->save != NULL && t->node_rank == 0 && t->local_rank_base == 0,
		/* `check` and `bench` in an image: their workers are ctrun-worker (cmd_check.c). */
		.worker = agent && o->command.n > 0 && strcmp(o->command.v[0], CTR_WORKER_BIN) == 0,
		.dry_run = o->dry_run, .quiet = o->quiet, .writable = o->writable,
		.verbose = o->verbose,
	};
	if (ctr_cache_cfg(o, &c->cache, c->cache_dir, sizeof(c->cache_dir), &a->cache_err) == 0)
		a->cache = &c->cache;
	/* The spec's part of it, as every driver reads it. */
	c->spec.quiet = o->quiet;
	c->spec.entrypoint = o->entrypoint;
	c->spec.writable = o->writable;
	c->spec.as_root = o->root;
	c->spec.no_home = o->no_home;
}

int ctr_unshare_parse(const char *list, unsigned *out, struct err *e)
{
	static const struct {
		const char *name;
		unsigned bit;
	} known[] = { { "net", CTR_UNSHARE_NET }, { "ipc", CTR_UNSHARE_IPC },
		      { "uts", CTR_UNSHARE_UTS } };
	const char *p = list;

	*out = 0;
	if (list == NULL)
		return 0;
	for (;;) {
		size_t n = strcspn(p, ","), k;

		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (n == strlen(known[k].name) && strncmp(p, known[k].name, n) == 0)
				break;
		if (n == 0)
			return err_set(e, EXIT_USAGE, "--unshare %s: an empty namespace name (give "
				       "net, ipc, uts, comma-separated)", list);
		if (k == sizeof(known) / sizeof(known[0]))
			return err_set(e, EXIT_USAGE, "--unshare %s: unknown namespace '%.*s' (give "
				       "net, ipc, uts, comma-separated)", list, (int)(n > 64 ? 64 : n), p);
		*out |= known[k].bit;
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}
