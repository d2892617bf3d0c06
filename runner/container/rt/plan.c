/* plan.c - a plan's memory: its files and links (see rt.h).
 * Pure: the adapters build plans with these; runner/container/ writes and
 * runs them. */
#include "rt.h"

#include <stdlib.h>
#include <string.h>

void ctr_plan_free(struct ctr_plan *p)
{
	strv_free(&p->argv);
	strv_free(&p->setenv);
	strv_free(&p->unsetenv);
	strv_free(&p->keepenv);
	strv_free(&p->links);
	strv_free(&p->agent_env);
	strv_free(&p->agent_libdirs);
	strv_free(&p->agent_entry);
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files[i].path);
		free(p->files[i].data);
	}
	free(p->files);
	free(p->ovl_lower);
	free(p->ovl_tmp);
	free(p->ovl_merged);
	mounts_free(&p->ovl_points);
	memset(p, 0, sizeof(*p));
}

int ctr_plan_file(struct ctr_plan *p, const char *path, const char *data, size_t len,
		  struct err *e)
{
	struct ctr_file *f = realloc(p->files, (p->nfiles + 1) * sizeof(*f));

	if (f == NULL)
		return err_sys(e, EXIT_CTRUN, "plan");
	p->files = f;
	f = &p->files[p->nfiles];
	f->path = strdup(path);
	f->data = malloc(len + 1);
	if (f->path == NULL || f->data == NULL) {
		free(f->path);
		free(f->data);
		return err_sys(e, EXIT_CTRUN, "plan");
	}
	memcpy(f->data, data, len);
	f->data[len] = '\0';
	f->len = len;
	f->mode = 0644;
	p->nfiles++;
	return 0;
}

int ctr_plan_exec_file(struct ctr_plan *p, const char *path, const char *text, struct err *e)
{
	if (ctr_plan_file(p, path, text, strlen(text), e) < 0)
		return -1;
	p->files[p->nfiles - 1].mode = 0755;
	return 0;
}

int ctr_plan_link(struct ctr_plan *p, const char *target, const char *path, struct err *e)
{
	if (strv_push(&p->links, target) < 0 || strv_push(&p->links, path) < 0)
		return err_sys(e, EXIT_CTRUN, "plan");
	return 0;
}
