/* apptainer.c - the apptainer / singularity adapter: `exec` (or `run`
 * when the image's entrypoint is wanted) with binds, --pwd and --nv.
 *
 * Binds go as `--bind SRC:DST[:ro]` when both paths are plain; a path with
 * ',' ':' '^' or '\' (characters of the --bind parser) or surrounding
 * whitespace (trimmed by its parser) goes as `--mount` instead, whose value
 * is CSV (Go's encoding/csv): such a field is double-quoted with inner
 * quotes doubled.  Newlines and carriage returns are refused: CSV rewrites
 * "\r\n" and singularity < 3.9 has no --mount at all.
 *
 * --cleanenv: the container starts from the image's environment (plus what
 * apptainer itself sets, e.g. LD_LIBRARY_PATH for --nv); the agent layers
 * the host's and the workers' variables on top from its spec, so no value
 * ever goes through APPTAINERENV_ / SINGULARITYENV_ or a shell.  The two
 * binaries take the same flags here. */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool plain(const char *p)
{
	size_t n = strlen(p);

	return strpbrk(p, ",:^\\") == NULL && n > 0 && p[0] != ' ' && p[0] != '\t' &&
	       p[n - 1] != ' ' && p[n - 1] != '\t';
}

/* One CSV field "key=value", quoted when the value needs it. */
static int csv_field(struct strv *out, const char *key, const char *value)
{
	size_t n = strlen(key) + 1 + 2 * strlen(value) + 3;
	char *f = malloc(n), *o = f;
	bool quote = strpbrk(value, ",\"") != NULL || value[0] == ' ' || value[0] == '\t';

	if (f == NULL)
		return -1;
	if (quote)
		*o++ = '"';
	o += sprintf(o, "%s=", key);
	for (const char *v = value; *v != '\0'; v++) {
		if (*v == '"')
			*o++ = '"';
		*o++ = *v;
	}
	if (quote)
		*o++ = '"';
	*o = '\0';
	return strv_take(out, f);
}

static int bind_arg(const struct ctr_spec *s, const struct ctr_mount *m, struct ctr_plan *p,
		    struct err *e)
{
	struct strv fields = { 0 };
	char *joined = NULL;
	size_t len = 0;
	int ret = 0;

	if (strpbrk(m->src, "\n\r") != NULL || strpbrk(m->dst, "\n\r") != NULL)
		return err_set(e, EXIT_USAGE, "mount %s: %s cannot mount a path that contains a "
			       "newline or carriage return", strpbrk(m->src, "\n\r") ? m->src : m->dst,
			       ctr_runtime_name(s->rt));
	if (plain(m->src) && plain(m->dst)) {
		ret |= strv_push(&p->argv, "--bind");
		ret |= strv_pushf(&p->argv, "%s:%s%s", m->src, m->dst, m->ro ? ":ro" : "");
		return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
	}
	ret |= strv_push(&fields, "type=bind");
	ret |= csv_field(&fields, "source", m->src);
	ret |= csv_field(&fields, "destination", m->dst);
	if (m->ro)
		ret |= strv_push(&fields, "ro");
	for (size_t i = 0; ret == 0 && i < fields.n; i++)
		len += strlen(fields.v[i]) + 1;
	if (ret == 0 && (joined = malloc(len)) != NULL) {
		char *o = joined;

		for (size_t i = 0; i < fields.n; i++)
			o += sprintf(o, "%s%s", i ? "," : "", fields.v[i]);
		ret |= strv_push(&p->argv, "--mount");
		ret |= strv_take(&p->argv, joined);
	} else {
		ret = -1;
	}
	strv_free(&fields);
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
}

int rt_apptainer_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	int ret = 0;

	if (s->image == NULL)
		return err_set(e, EXIT_CTRUN, "%s: no image", ctr_runtime_name(s->rt));
	ret |= strv_push(&p->argv, s->bin);
	ret |= strv_push(&p->argv, s->entrypoint ? "run" : "exec");
	ret |= strv_push(&p->argv, "--cleanenv");
	if (s->gpus)
		ret |= strv_push(&p->argv, "--nv");
	if (s->cwd != NULL) {
		ret |= strv_push(&p->argv, "--pwd");
		ret |= strv_push(&p->argv, s->cwd);
	}
	if (ret != 0)
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	for (size_t i = 0; i < s->mounts.n; i++)
		if (bind_arg(s, &s->mounts.v[i], p, e) < 0)
			return -1;
	ret |= strv_push(&p->argv, s->image);
	ret |= strv_extend(&p->argv, s->argv.v);
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
}
