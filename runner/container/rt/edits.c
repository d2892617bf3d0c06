/* edits.c - a container's edits from the host (edits.h): freed, checked
 * against what the runtime can apply, turned into binds. */
#include "edits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool ctr_edit_bind_opt(const char *o)
{
	static const char *const ok[] = { "bind", "rbind", "ro", "rw", "nosuid", "nodev",
					  "private", "rprivate", "slave", "rslave", NULL };

	for (const char *const *p = ok; *p != NULL; p++)
		if (strcmp(*p, o) == 0)
			return true;
	return false;
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
