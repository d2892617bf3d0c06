/* edits_host.c - edits that give the container what the host has, as it
 * is: its device nodes, binds of its files, variables (edits.h). */
#include "edits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util.h"

size_t ctr_edits_from(struct ctr_edits *d, const char *who, struct err *e)
{
	long i = strv_find(&d->from, who);

	if (i >= 0)
		return (size_t)i;
	if (strv_push(&d->from, who) < 0) {
		err_sys(e, EXIT_CTRUN, "edits");
		return (size_t)-1;
	}
	return d->from.n - 1;
}

int ctr_edits_host_node(struct ctr_edits *d, const char *path, size_t from, struct err *e)
{
	struct ctr_edit_node n = { 0 }, *v;
	struct stat st;

	for (size_t i = 0; i < d->nnodes; i++)
		if (strcmp(d->nodes[i].path, path) == 0)
			return 0;
	if (lstat(path, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s (for %s)", path, d->from.v[from]);
	if (!S_ISCHR(st.st_mode))
		return err_set(e, EXIT_CTRUN, "%s (for %s) is not a character device", path,
			       d->from.v[from]);
	n.type = 'c';
	n.major = major(st.st_rdev);
	n.minor = minor(st.st_rdev);
	n.mode = n.host_mode = st.st_mode & 07777;
	n.uid = n.host_uid = st.st_uid;
	n.gid = n.host_gid = st.st_gid;
	n.host_same = true;
	snprintf(n.access, sizeof(n.access), "rwm");
	n.from = from;
	n.path = strdup(path);
	n.host = strdup(path);
	v = realloc(d->nodes, (d->nnodes + 1) * sizeof(*v));
	if (n.path == NULL || n.host == NULL || v == NULL) {
		free(n.path);
		free(n.host);
		if (v != NULL)
			d->nodes = v;
		return err_sys(e, EXIT_CTRUN, "edits");
	}
	d->nodes = v;
	d->nodes[d->nnodes++] = n;
	return 0;
}

int ctr_edits_host_bind(struct ctr_edits *d, const char *src, const char *dst, bool ro,
			size_t from, struct err *e)
{
	struct ctr_edit_mount *v = realloc(d->mounts, (d->nmounts + 1) * sizeof(*v)), *m;

	if (v == NULL)
		return err_sys(e, EXIT_CTRUN, "edits");
	d->mounts = v;
	m = &v[d->nmounts];
	memset(m, 0, sizeof(*m));
	m->bind = true;
	m->from = from;
	m->src = strdup(src);
	m->dst = strdup(dst);
	m->type = strdup("bind");
	d->nmounts++;
	if (m->src == NULL || m->dst == NULL || m->type == NULL || strv_push(&m->opts, "rbind") < 0 ||
	    (ro && (strv_push(&m->opts, "ro") < 0 || strv_push(&m->opts, "nosuid") < 0 ||
		    strv_push(&m->opts, "nodev") < 0)))
		return err_sys(e, EXIT_CTRUN, "edits");
	return 0;
}

int ctr_edits_setenv(struct ctr_edits *d, const char *kv, struct err *e)
{
	size_t k = strcspn(kv, "=");

	for (size_t i = 0; i < d->env.n; i++)
		if (strncmp(d->env.v[i], kv, k) == 0 && d->env.v[i][k] == '=') {
			char *dup = strdup(kv);

			if (dup == NULL)
				return err_sys(e, EXIT_CTRUN, "edits");
			free(d->env.v[i]);
			d->env.v[i] = dup;
			return 0;
		}
	return strv_push(&d->env, kv) < 0 ? err_sys(e, EXIT_CTRUN, "edits") : 0;
}
