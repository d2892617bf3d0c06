/* edits.c - a container's edits from the host (edits.h): freed, checked
 * against what the runtime can apply, turned into binds. */
#include "edits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers.h"
#include "util.h"

const char *const ctr_hook_stage_names[CTR_HOOK_STAGES] = {
	"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop",
};

bool ctr_edits_empty(const struct ctr_edits *d)
{
	return d->env.n == 0 && d->nnodes == 0 && d->nmounts == 0 && d->nhooks == 0 &&
	       d->ngids == 0;
}

void ctr_edits_free(struct ctr_edits *d)
{
	for (size_t i = 0; i < d->nnodes; i++) {
		free(d->nodes[i].path);
		free(d->nodes[i].host);
	}
	for (size_t i = 0; i < d->nmounts; i++) {
		free(d->mounts[i].src);
		free(d->mounts[i].dst);
		free(d->mounts[i].type);
		strv_free(&d->mounts[i].opts);
	}
	for (size_t i = 0; i < d->nhooks; i++) {
		free(d->hooks[i].path);
		strv_free(&d->hooks[i].args);
		strv_free(&d->hooks[i].env);
	}
	free(d->nodes);
	free(d->mounts);
	free(d->hooks);
	free(d->gids);
	strv_free(&d->env);
	strv_free(&d->from);
	memset(d, 0, sizeof(*d));
}

unsigned ctr_edits_can(const struct ctr_spec *s)
{
	unsigned can = s->rt != NULL ? s->rt->edits : 0;

	if (s->rootless)
		can &= ~(unsigned)(CTR_EDIT_NODES_MADE | CTR_EDIT_GIDS);
	return can;
}

bool ctr_edit_bind_opt(const char *o)
{
	static const char *const ok[] = { "bind", "rbind", "ro", "rw", "nosuid", "nodev",
					  "private", "rprivate", "slave", "rslave", NULL };

	for (const char *const *p = ok; *p != NULL; p++)
		if (strcmp(*p, o) == 0)
			return true;
	return false;
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

int ctr_edits_binds(const struct ctr_edits *d, bool dev, struct ctr_mounts *out, struct err *e)
{
	for (size_t i = 0; i < d->nnodes; i++) {
		const struct ctr_edit_node *n = &d->nodes[i];
		struct ctr_mount m = { .kind = CTR_MOUNT_BIND, .src = n->host, .dst = n->path,
				       .file = true, .dev = dev };

		if (mounts_add_copy(out, &m, e) < 0)
			return -1;
	}
	for (size_t i = 0; i < d->nmounts; i++) {
		const struct ctr_edit_mount *mt = &d->mounts[i];
		struct ctr_mount m = { .kind = CTR_MOUNT_BIND, .src = mt->src, .dst = mt->dst,
				       .suid = true, .dev = true };

		if (!mt->bind)
			continue;
		for (size_t j = 0; j < mt->opts.n; j++) {
			m.ro |= strcmp(mt->opts.v[j], "ro") == 0;
			m.suid &= strcmp(mt->opts.v[j], "nosuid") != 0;
			m.dev &= strcmp(mt->opts.v[j], "nodev") != 0;
		}
		if (mount_check_source(&m, e) < 0 || mounts_add_copy(out, &m, e) < 0)
			return -1;
	}
	return 0;
}
