/* devices.c - the devices phase (container.h): CDI devices named by
 * --device or by the GPU source turned into the container's edits
 * (rt/edits.h), with the host's facts the CDI library fills in (a node's
 * type, numbers and mode from the host's node: pkg/cdi/
 * container-edits_unix.go fillMissingInfo), in the library's order (a
 * spec's own edits before its first device's), checked against what the
 * runtime can apply. */
#include "container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "drivers.h"
#include "edits.h"
#include "util.h"

/* The spec directories, read once per run. */
static int registry(struct ctr_setup *c, struct err *e)
{
	struct strv dirs = { 0 };
	int rv = 0;

	if (c->cdi_state == 0) {
		const char *list = c->ask.cdi_spec_dirs;

		for (const char *p = list; p != NULL && rv == 0;) {
			size_t n = strcspn(p, ":");

			if (n > 0 && strv_pushn(&dirs, p, n) < 0)
				rv = err_sys(&c->cdi_err, EXIT_CTRUN, "cdi_spec_dirs");
			p = p[n] != '\0' ? p + n + 1 : NULL;
		}
		if (rv == 0)
			rv = cdi_reg_load(&dirs, &c->cdi, &c->cdi_err);
		c->cdi_state = rv == 0 ? 1 : -1;
		strv_free(&dirs);
	}
	if (c->cdi_state < 0) {
		*e = c->cdi_err;
		return -1;
	}
	return 0;
}

static const char *ctr_gpu_cdi_refused(struct ctr_setup *c, char *why, size_t size);

int ctr_gpu_cdi(struct ctr_setup *c, const char *gpu_ids, bool *use, struct err *e)
{
	const char *src = c->ask.gpu_source, *why = NULL;
	char ids[1024], *save = NULL, reason[1200] = "";
	struct err le = { 0 };

	*use = false;
	if (strcmp(src, "hook") == 0) {
		why = "[gpu] source = hook";
		goto hook;
	}
	if (registry(c, &le) < 0) {
		if (strcmp(src, "cdi") == 0) {
			*e = le;
			return -1;
		}
		snprintf(reason, sizeof(reason), "the CDI specs cannot be read (%s)", le.msg);
		why = reason;
		goto hook;
	}
	if (!cdi_reg_has_kind(&c->cdi, "nvidia.com", "gpu")) {
		if (strcmp(src, "cdi") == 0)
			return err_set(e, EXIT_CTRUN, "[gpu] source = cdi, but no CDI spec of kind "
				       "nvidia.com/gpu is in the spec directories (nvidia-ctk cdi "
				       "generate writes one; or set source = hook)");
		why = "no CDI spec of kind nvidia.com/gpu";
		goto hook;
	}
	snprintf(ids, sizeof(ids), "%s", gpu_ids != NULL ? gpu_ids : "all");
	for (char *g = strtok_r(ids, ",", &save); g != NULL; g = strtok_r(NULL, ",", &save)) {
		if (!cdi_reg_has(&c->cdi, "nvidia.com", "gpu", g) && strcmp(src, "auto") == 0) {
			snprintf(reason, sizeof(reason), "the nvidia.com/gpu spec has no device '%s'",
				 g);
			strv_free(&c->cdi_gpus);
			why = reason;
			goto hook;
		}
		/* source = cdi: an unknown one is the devices phase's error. */
		if (strv_pushf(&c->cdi_gpus, "nvidia.com/gpu=%s", g) < 0)
			return err_sys(e, EXIT_CTRUN, "gpus");
	}
	if (strcmp(src, "auto") == 0 && (why = ctr_gpu_cdi_refused(c, reason, sizeof(reason))) != NULL) {
		strv_free(&c->cdi_gpus);
		goto hook;
	}
	*use = true;
	if (c->ask.verbose > 0 && !c->ask.quiet)
		fprintf(stderr, "ctrun: GPUs from CDI (%s): %s\n",
			strcmp(src, "cdi") == 0 ? "[gpu] source = cdi"
						: "source auto: an nvidia.com/gpu spec has them",
			ids[0] != '\0' ? gpu_ids != NULL ? gpu_ids : "all" : "");
	return 0;
hook:
	if (c->ask.verbose > 0 && !c->ask.quiet)
		fprintf(stderr, "ctrun: GPUs from ctrun-hook: %s\n", why);
	return 0;
}

/* The library's fillMissingInfo, and what a bind of the host's node gives. */
static int host_facts(struct ctr_edit_node *n, const struct cdi_node *cn, const char *who,
		      struct err *e)
{
	bool minimal = cn->type != 0 && (cn->major != 0 || cn->type == 'p'), exists;
	char host_type = 0;
	struct stat st;

	n->type = cn->type == 'u' ? 'c' : cn->type;
	n->major = (unsigned)cn->major;
	n->minor = (unsigned)cn->minor;
	exists = lstat(n->host, &st) == 0;
	if (exists)
		host_type = S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b'
						: S_ISFIFO(st.st_mode) ? 'p' : 0;
	if (host_type == 0 && !minimal)
		return err_set(e, EXIT_USAGE, "CDI device %s: device node %s: the host's %s is %s, "
			       "and the spec gives no type and numbers to make it from", who,
			       n->path, n->host, exists ? "not a device node" : "missing");
	if (host_type != 0 && !minimal) {
		if (n->type != 0 && n->type != host_type)
			return err_set(e, EXIT_USAGE, "CDI device %s: device node %s is type %c, the "
				       "host's %s is type %c", who, n->path, n->type, n->host,
				       host_type);
		n->type = host_type;
		if (cn->major == 0 && host_type != 'p') {
			n->major = major(st.st_rdev);
			n->minor = minor(st.st_rdev);
		}
	}
	n->host_same = host_type != 0 && host_type == n->type &&
		       (n->type == 'p' ||
			(major(st.st_rdev) == n->major && minor(st.st_rdev) == n->minor));
	if (host_type != 0) {
		n->host_mode = st.st_mode & 07777;
		n->host_uid = st.st_uid;
		n->host_gid = st.st_gid;
	}
	return 0;
}

static int add_node(struct ctr_edits *d, const struct cdi_node *cn, size_t from, struct err *e)
{
	struct ctr_edit_node n = { 0 }, *v;
	size_t i;

	n.path = strdup(cn->path);
	n.host = strdup(cn->host_path != NULL ? cn->host_path : cn->path);
	if (n.path == NULL || n.host == NULL)
		goto nomem;
	if (host_facts(&n, cn, d->from.v[from], e) < 0)
		goto fail;
	n.mode = cn->mode;
	n.mode_asked = cn->has_mode;
	n.uid = cn->uid;
	n.uid_asked = cn->has_uid;
	n.gid = cn->gid;
	n.gid_asked = cn->has_gid;
	snprintf(n.access, sizeof(n.access), "%s",
		 cn->perms[0] == '\0' ? "rwm" : strcmp(cn->perms, "none") == 0 ? "" : cn->perms);
	n.from = from;
	/* A later node at the same path replaces it (the library's RemoveDevice). */
	for (i = 0; i < d->nnodes && strcmp(d->nodes[i].path, n.path) != 0; i++)
		;
	if (i < d->nnodes) {
		free(d->nodes[i].path);
		free(d->nodes[i].host);
		d->nodes[i] = n;
		return 0;
	}
	if ((v = realloc(d->nodes, (d->nnodes + 1) * sizeof(*v))) == NULL)
		goto nomem;
	d->nodes = v;
	d->nodes[d->nnodes++] = n;
	return 0;
nomem:
	err_sys(e, EXIT_CTRUN, "devices");
fail:
	free(n.path);
	free(n.host);
	return -1;
}

static int add_mount(struct ctr_edits *d, const struct cdi_mount *cm, size_t from,
		     struct err *e)
{
	struct ctr_edit_mount *v = realloc(d->mounts, (d->nmounts + 1) * sizeof(*v)), *m;

	if (v == NULL)
		return err_sys(e, EXIT_CTRUN, "devices");
	d->mounts = v;
	m = &v[d->nmounts];
	memset(m, 0, sizeof(*m));
	d->nmounts++;
	m->bind = cm->type != NULL && strcmp(cm->type, "bind") == 0;
	for (size_t i = 0; i < cm->options.n; i++)
		m->bind |= strcmp(cm->options.v[i], "bind") == 0 ||
			   strcmp(cm->options.v[i], "rbind") == 0;
	m->src = strdup(cm->host_path);
	m->dst = strdup(cm->container_path);
	m->type = strdup(cm->type != NULL && cm->type[0] != '\0' ? cm->type
							       : m->bind ? "bind" : "none");
	m->from = from;
	if (m->src == NULL || m->dst == NULL || m->type == NULL ||
	    strv_extend(&m->opts, cm->options.v) < 0)
		return err_sys(e, EXIT_CTRUN, "devices");
	if (cm->container_path[0] != '/')
		return err_set(e, EXIT_USAGE, "CDI device %s: mount containerPath '%s' is not "
			       "absolute", d->from.v[from], cm->container_path);
	return 0;
}

static int add_hook(struct ctr_edits *d, const struct cdi_hook *ch, size_t from, struct err *e)
{
	struct ctr_edit_hook *v;
	struct stat st;

	/* SPEC.md: an absolute path (cdispec.c), and here one that runs. */
	if (stat(ch->path, &st) < 0 || !S_ISREG(st.st_mode) || access(ch->path, X_OK) < 0)
		return err_set(e, EXIT_USAGE, "CDI device %s: %s hook %s is not an executable file",
			       d->from.v[from], cdi_stage_names[ch->stage], ch->path);
	if ((v = realloc(d->hooks, (d->nhooks + 1) * sizeof(*v))) == NULL)
		return err_sys(e, EXIT_CTRUN, "devices");
	d->hooks = v;
	v = &v[d->nhooks];
	memset(v, 0, sizeof(*v));
	d->nhooks++;
	v->stage = (enum ctr_hook_stage)ch->stage;
	v->timeout = ch->timeout;
	v->from = from;
	if ((v->path = strdup(ch->path)) == NULL || strv_extend(&v->args, ch->args.v) < 0 ||
	    strv_extend(&v->env, ch->env.v) < 0)
		return err_sys(e, EXIT_CTRUN, "devices");
	return 0;
}

static int add_env(struct ctr_edits *d, const char *kv, struct err *e)
{
	size_t k = strcspn(kv, "=");

	for (size_t i = 0; i < d->env.n; i++)
		if (strncmp(d->env.v[i], kv, k) == 0 && d->env.v[i][k] == '=') {
			char *dup = strdup(kv);

			if (dup == NULL)
				return err_sys(e, EXIT_CTRUN, "devices");
			free(d->env.v[i]);
			d->env.v[i] = dup;
			return 0;
		}
	return strv_push(&d->env, kv) < 0 ? err_sys(e, EXIT_CTRUN, "devices") : 0;
}

/* One containerEdits of a CDI spec or device, by `who`. */
static int add_edits(struct ctr_edits *d, const struct cdi_edits *ce, const char *who,
		     struct err *e)
{
	size_t from = d->from.n;

	if (ce->intel_rdt || ce->net_devices)
		return err_set(e, EXIT_USAGE, "CDI device %s: %s are not applied by ctrun under any "
			       "runtime", who, ce->intel_rdt ? "intelRdt settings" : "netDevices");
	if (strv_push(&d->from, who) < 0)
		return err_sys(e, EXIT_CTRUN, "devices");
	for (size_t i = 0; i < ce->env.n; i++)
		if (add_env(d, ce->env.v[i], e) < 0)
			return -1;
	for (size_t i = 0; i < ce->nnodes; i++)
		if (add_node(d, &ce->nodes[i], from, e) < 0)
			return -1;
	for (size_t i = 0; i < ce->nmounts; i++)
		if (add_mount(d, &ce->mounts[i], from, e) < 0)
			return -1;
	for (size_t i = 0; i < ce->nhooks; i++)
		if (add_hook(d, &ce->hooks[i], from, e) < 0)
			return -1;
	for (size_t i = 0; i < ce->ngids; i++) {
		bool seen = false;
		gid_t *v;

		for (size_t j = 0; j < d->ngids; j++)
			seen |= d->gids[j] == ce->gids[i];
		if (seen)
			continue;
		if ((v = realloc(d->gids, (d->ngids + 1) * sizeof(*v))) == NULL)
			return err_sys(e, EXIT_CTRUN, "devices");
		d->gids = v;
		if (d->ngids == 0)
			d->gids_from = from;
		d->gids[d->ngids++] = ce->gids[i];
	}
	return 0;
}

/* A runtime that binds: the nodes and bind mounts into spec.mounts, their
 * destinations resolved in the image as --mount's are. */
static int binds(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	size_t first = s->mounts.n;

	if (ctr_edits_binds(&s->edits, (s->rt->edits & CTR_EDIT_DEV_BINDS) != 0, &s->mounts,
			    e) < 0)
		return -1;
	for (size_t i = first; ctr_rootfs_dir(s) != NULL && i < s->mounts.n; i++)
		if (mount_resolve_dest(s->rootfs, &s->mounts.v[i], e) < 0)
			return -1;
	return 0;
}

/* The edits of the devices named, in the library's order, into d. */
static int collect(struct ctr_setup *c, const struct strv *names, struct ctr_edits *d,
		   struct err *e)
{
	struct cdi_pick *picks = NULL;
	size_t n = 0;
	int rv = -1;

	if (registry(c, e) < 0 || cdi_reg_resolve(&c->cdi, names, &picks, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char spec_who[2 * CDI_NAME_MAX + 32];

		snprintf(spec_who, sizeof(spec_who), "%s/%s (the spec's own edits)",
			 picks[i].file->spec.vendor, picks[i].file->spec.class);
		if ((picks[i].with_spec &&
		     add_edits(d, &picks[i].file->spec.edits, spec_who, e) < 0) ||
		    add_edits(d, &picks[i].dev->edits, picks[i].qname, e) < 0)
			goto out;
	}
	rv = 0;
out:
	free(picks);
	return rv;
}

/* source = auto: whether the runtime can apply the GPUs' CDI edits (NVIDIA's
 * spec has hooks, which enroot and apptainer run not): NULL, or why not. */
static const char *ctr_gpu_cdi_refused(struct ctr_setup *c, char *why, size_t size)
{
	struct ctr_spec t = { .rt = c->spec.rt, .rootless = c->spec.rootless,
			      .uid = c->spec.uid, .gid = c->spec.gid };
	struct err e = { 0 };
	int rv = collect(c, &c->cdi_gpus, &t.edits, &e);

	if (rv == 0)
		rv = ctr_edits_check(&t, &e);
	ctr_edits_free(&t.edits);
	if (rv == 0)
		return NULL;
	snprintf(why, size, "the GPUs' CDI devices cannot be applied here (%s)", e.msg);
	return why;
}

int ctr_devices(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	struct strv names = { 0 };
	int rv = -1;

	if (c->ask.devices->n == 0 && c->cdi_gpus.n == 0)
		return 0;
	if (strv_extend(&names, c->cdi_gpus.v) < 0 || strv_extend(&names, c->ask.devices->v) < 0) {
		err_sys(e, EXIT_CTRUN, "devices");
		goto out;
	}
	if (collect(c, &names, &s->edits, e) < 0)
		goto out;
	/* The GPUs' nodes are the container's only ones: CUDA numbers them
	 * 0..n-1 (as with ctrun-hook, oci.h). */
	if (c->cdi_gpus.n > 0) {
		char cvd[1100] = "CUDA_VISIBLE_DEVICES=";
		bool all = false;

		for (size_t i = 0; i < c->cdi_gpus.n; i++) {
			all |= strcmp(c->cdi_gpus.v[i], "nvidia.com/gpu=all") == 0;
			snprintf(cvd + strlen(cvd), sizeof(cvd) - strlen(cvd), "%s%zu", i ? "," : "", i);
		}
		if (!all && add_env(&s->edits, cvd, e) < 0)
			goto out;
		s->edits.gpus_renumbered = !all;
	}
	if (ctr_edits_check(s, e) < 0)
		goto out;
	if (!(ctr_edits_can(s) & CTR_EDIT_MOUNT_OPTS) && binds(c, e) < 0)
		goto out;
	rv = 0;
out:
	strv_free(&names);
	return rv;
}
