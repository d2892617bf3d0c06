/* named_run.c - the keep phase (--name, --save) of one run: where a
 * container can be kept, the named container taken in the user's node
 * cache (images/cache/named.h), and the spec pointed at it.
 *
 * By default (OCI, crun, charliecloud) the overlay's upper and work
 * directories are the named container's, on disk instead of the run's
 * tmpfs, and a --save run's in the run directory.  The runs of one named
 * container at once share its one overlay (namedroot.h); a run that saves
 * it or starts it anew has it to itself and mounts its own (overlay.c).
 * A driver with a keep phase of its own (drivers.h keep: enroot's own
 * container, which enroot starts many times at once itself) keeps it there
 * its way, inside the named container's directory, so listing, removing
 * and the locks are the same for every runtime. */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers.h"
#include "namedroot.h"
#include "util.h"

int ctr_named_check(const struct ctr_ask *o, const struct topo *t, const struct ctr_spec *s,
		    struct err *e)
{
	if (o->save != NULL) {
		if (ctr_save_check(o->save, e) < 0)
			return -1;
		if (ctr_root_need(s->rt) == ROOT_IMAGE_FILE)
			return err_set(e, EXIT_USAGE, "--save: %s runs cannot be saved by ctrun: use "
				       "--runtime oci or enroot", ctr_runtime_name(s->rt));
	}
	if (o->name == NULL) {
		if (o->name_reset)
			return err_set(e, EXIT_USAGE, "--name-reset needs --name NAME (the named "
				       "container to start anew)");
		return 0;
	}
	if (named_check_name(o->name, e) < 0)
		return -1;
	if (ctr_root_need(s->rt) == ROOT_IMAGE_FILE)
		return err_set(e, EXIT_USAGE, "--name %s: %s runs are not kept (Singularity 3.x's "
			       "--overlay needs its setuid starter): use --runtime oci or enroot",
			       o->name, ctr_runtime_name(s->rt));
	/* Task mode starts one container per task: they share the named
	 * container's root (namedroot.h), but a run that saves it or starts
	 * it anew needs it to itself. */
	if (t->mode == MODE_TASK && t->ntasks_on_node > 1 && (o->name_reset || o->save != NULL))
		return err_set(e, EXIT_USAGE, "--name %s with %s: %ld tasks of this step on %s would "
			       "each need it to themselves: run one task per node (node mode: srun "
			       "--ntasks-per-node=1 ctrun --nproc-per-node N)", o->name,
			       o->name_reset ? "--name-reset" : "--save", t->ntasks_on_node, t->host);
	return 0;
}

const char *ctr_named_want(const struct ctr_ask *o)
{
	char dir[PATH_MAX];

	if (o->name == NULL || (o->runtime != NULL && strcmp(o->runtime, "auto") != 0) ||
	    o->cache == NULL ||
	    xsnprintf(dir, sizeof(dir), "%s/containers/%s", o->cache->dir, o->name) < 0)
		return o->runtime;
	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++)
		if ((*d)->kept != NULL && (*d)->kept(dir))
			return (*d)->name;
	return o->runtime;
}

/* The spec pointed at the named container (its directories; a driver's
 * own container made there by its keep phase: enroot create). */
static int keep(struct ctr_setup *c, struct ctr_keep *k, struct err *e)
{
	if (c->spec.rt->keep != NULL) {
		k->dir = c->named.dir;
		return c->spec.rt->keep(&c->spec, &c->ask, k, e);
	}
	c->spec.named_upper = c->named.upper;
	c->spec.named_work = c->named.work;
	return 0;
}

/* The named container's one mounted root, joined or mounted
 * (namedroot.h), for the runtime's child to attach. */
static int share_root(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	struct named_root_req q = { .n = &c->named, .lower = s->rootfs, .holder_mnt = -1,
				    .rootless = s->rootless, .uid = s->uid, .gid = s->gid };

	if (s->holder) {
		/* As root only (ctrroot.c unpacks a user's named container's
		 * image: a FUSE mount would end with the run that made it). */
		if (s->rootless)
			return err_set(e, EXIT_CTRUN, "--name %s: a user's named container needs "
				       "its image unpacked", c->ask.name);
		q.lower = s->rootfs_ns;
		q.holder_mnt = s->holder_mnt;
	}
	if (q.lower == NULL)
		return err_set(e, EXIT_CTRUN, "--name %s: no image tree", c->ask.name);
	if (named_root_take(&q, &c->nroot, e) < 0)
		return -1;
	s->named_shared = true;
	s->named_tree = c->nroot.tree;
	s->named_user = c->nroot.user;
	return 0;
}

int ctr_named_take(struct ctr_setup *c, struct err *e)
{
	const struct ctr_ask *o = &c->ask;
	const struct ctr_driver *d = c->spec.rt;
	struct ctr_keep k = { .rundir_made = &c->rundir_made };
	struct cache_cfg cfg;
	const char *dir;
	char real[PATH_MAX], id[CACHE_ID_MAX];
	struct named_req q = { .name = o->name, .reset = o->name_reset };
	int rv;

	if (o->name == NULL && o->save != NULL) {
		c->spec.writable = true;
		if (d->keep != NULL)
			return d->keep(&c->spec, o, &k, e);
		/* The run's changes outlive its namespace until they are saved:
		 * the upper layer on disk in the run directory. */
		if (xsnprintf(c->named.upper, sizeof(c->named.upper), "%s/save/upper", c->rundir) < 0 ||
		    xsnprintf(c->named.work, sizeof(c->named.work), "%s/save/work", c->rundir) < 0)
			return err_set(e, EXIT_CTRUN, "run directory path too long");
		c->spec.named_upper = c->named.upper;
		c->spec.named_work = c->named.work;
		return 0;
	}
	if (o->name == NULL)
		return 0;
	c->spec.writable = true;
	if (ctr_ask_cache(o, e) == NULL)
		return -1;
	cfg = *o->cache;
	dir = cfg.dir;
	cfg.lookup = NULL; /* the user's own cache, never the shared one */
	/* The identity of the image the user named, not of a staged copy
	 * (each job's copy is a new file). */
	if (realpath(o->image, real) == NULL)
		return err_sys(e, EXIT_USAGE, "--image %s", o->image);
	if (cache_identity(real, id, sizeof(id), e) < 0)
		return -1;
	q.cfg = &cfg;
	q.image = real;
	q.identity = id;
	if (o->dry_run) {
		if (xsnprintf(c->named.dir, sizeof(c->named.dir), "%s/containers/%s", dir,
			      o->name) < 0 ||
		    xsnprintf(c->named.upper, sizeof(c->named.upper), "%s/upper", c->named.dir) < 0 ||
		    xsnprintf(c->named.work, sizeof(c->named.work), "%s/work", c->named.dir) < 0)
			return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", dir);
		return keep(c, &k, e);
	}
	/* A run that saves it, or starts it anew, has it to itself. */
	q.exclusive = o->save != NULL;
	if (named_open(&q, &c->named, e) < 0)
		return -1;
	if (c->named.created && o->verbose > 0)
		fprintf(stderr, "ctrun: --name %s: a new container from %s\n", o->name, real);
	/* Under its gate (named.h): made, joined or mounted by one run at a time. */
	rv = keep(c, &k, e);
	if (rv == 0 && !c->named.exclusive)
		rv = d->keep != NULL ? named_share(&c->named, e) : share_root(c, e);
	named_gate_release(&c->named);
	return rv;
}

int ctr_named_dirs(const struct ctr_setup *c, struct err *e)
{
	const struct ctr_ask *o = &c->ask;
	char dir[PATH_MAX];

	/* A driver that keeps its own way made its container already. */
	if (o->name != NULL || o->save == NULL || o->dry_run || c->spec.named_upper == NULL)
		return 0;
	if (xsnprintf(dir, sizeof(dir), "%s/save", c->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (mkdir(dir, 0700) < 0 || mkdir(c->named.upper, 0755) < 0 || mkdir(c->named.work, 0755) < 0)
		return err_sys(e, EXIT_CTRUN, "--save: %s", dir);
	return 0;
}
