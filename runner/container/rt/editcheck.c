/* editcheck.c - a container's edits checked against what its runtime can
 * apply (edits.h: ctr_edits_can, ctr_edits_check); apart from edits.c,
 * which rt.h's spec does not need, so that no two modules include each
 * other. */
#include "edits.h"

#include <string.h>

#include "drivers.h"

unsigned ctr_edits_can(const struct ctr_spec *s)
{
	unsigned can = s->rt != NULL ? s->rt->edits : 0;

	if (s->rootless)
		can &= ~(unsigned)(CTR_EDIT_NODES_MADE | CTR_EDIT_GIDS);
	return can;
}

static const char *from(const struct ctr_edits *d, size_t i)
{
	return i < d->from.n ? d->from.v[i] : "?";
}

/* A node the runtime binds from the host: what a bind cannot give. */
static int check_bound(const struct ctr_spec *s, const struct ctr_edit_node *n,
		       const struct ctr_edits *d, struct err *e)
{
	const char *rt = s->rt->name, *who = from(d, n->from);
	const char *how = s->rootless && (s->rt->edits & CTR_EDIT_NODES_MADE)
				  ? "a rootless run binds the host's node"
				  : "it binds the host's node";

	if ((s->rt->edits & CTR_EDIT_HOST_DEV) && strncmp(n->path, "/dev/", 5) == 0 &&
	    strcmp(n->path, n->host) != 0)
		return err_set(e, EXIT_USAGE, "%s: device node %s of %s: %s shares the host's /dev, "
			       "where only the host's own node %s can be, not %s under another name: "
			       "use --runtime oci or enroot", rt, n->path, who, rt, n->path, n->host);
	if (!n->host_same)
		return err_set(e, EXIT_USAGE, "%s: device node %s of %s: the host has no such node "
			       "(%s is not %c %u:%u) and %s cannot make one (%s): use --runtime oci "
			       "as root", rt, n->path, who, n->host, n->type, n->major, n->minor, rt,
			       how);
	if (n->mode_asked && n->mode != n->host_mode)
		return err_set(e, EXIT_USAGE, "%s: device node %s of %s asks for mode %04o, the "
			       "host's %s has %04o, and %s (%s): use --runtime oci as root", rt,
			       n->path, who, n->mode, n->host, n->host_mode, rt, how);
	if ((n->uid_asked && n->uid != n->host_uid) || (n->gid_asked && n->gid != n->host_gid))
		return err_set(e, EXIT_USAGE, "%s: device node %s of %s asks for owner %u:%u, the "
			       "host's %s is %u:%u, and %s (%s): use --runtime oci as root", rt,
			       n->path, who, (unsigned)n->uid, (unsigned)n->gid, n->host,
			       (unsigned)n->host_uid, (unsigned)n->host_gid, rt, how);
	if (strcmp(n->access, "rwm") != 0 && n->type != 'p' && !s->rootless)
		return err_set(e, EXIT_USAGE, "%s: device node %s of %s asks for access '%s' only, "
			       "and %s has no device cgroup to hold it to that: use --runtime oci "
			       "as root", rt, n->path, who, n->access[0] ? n->access : "none", rt);
	return 0;
}

static int check_mount(const struct ctr_spec *s, unsigned can, const struct ctr_edit_mount *m,
		       const struct ctr_edits *d, struct err *e)
{
	const char *rt = s->rt->name;

	if (!m->bind && (can & CTR_EDIT_FS))
		return 0;
	if (!m->bind)
		return err_set(e, EXIT_USAGE, "%s: mount of %s (type %s) of %s: %s mounts only "
			       "binds: use --runtime oci or enroot", rt, m->dst, m->type,
			       from(d, m->from), rt);
	for (size_t j = 0; !(can & CTR_EDIT_MOUNT_OPTS) && j < m->opts.n; j++)
		if (!ctr_edit_bind_opt(m->opts.v[j]))
			return err_set(e, EXIT_USAGE, "%s: mount of %s of %s: %s cannot apply the "
				       "mount option '%s' (its binds take ro, rw, nosuid, nodev): "
				       "use --runtime oci or enroot", rt, m->dst, from(d, m->from), rt,
				       m->opts.v[j]);
	return 0;
}

int ctr_edits_check(const struct ctr_spec *s, struct err *e)
{
	const struct ctr_edits *d = &s->edits;
	unsigned can = ctr_edits_can(s);
	const char *rt = ctr_runtime_name(s->rt);

	if (ctr_edits_empty(d))
		return 0;
	for (size_t i = 0; i < d->nnodes; i++)
		if (!(can & CTR_EDIT_NODES_MADE) && check_bound(s, &d->nodes[i], d, e) < 0)
			return -1;
	for (size_t i = 0; i < d->nmounts; i++)
		if (check_mount(s, can, &d->mounts[i], d, e) < 0)
			return -1;
	if (d->nhooks > 0 && !(can & CTR_EDIT_HOOKS))
		return err_set(e, EXIT_USAGE, "%s: %s hook %s of %s: %s runs no OCI hooks: use "
			       "--runtime oci or crun", rt,
			       ctr_hook_stage_names[d->hooks[0].stage], d->hooks[0].path,
			       from(d, d->hooks[0].from), rt);
	if (d->ngids > 0 && !(can & CTR_EDIT_GIDS))
		return err_set(e, EXIT_USAGE, "%s: additional group %u of %s: %s cannot add a "
			       "group to the container's processes%s: use --runtime oci as root", rt,
			       (unsigned)d->gids[0], from(d, d->gids_from), rt,
			       s->rootless ? " as a user (its user namespace maps only your own)"
					   : "");
	return 0;
}

