/* cdipick.c - device names looked up in the registry (cdireg.h): pure. */
#include "cdireg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static bool of_kind(const struct cdi_file *f, const char *vendor, const char *class)
{
	return strcmp(f->spec.vendor, vendor) == 0 && strcmp(f->spec.class, class) == 0;
}

static const struct cdi_device *dev_of(const struct cdi_file *f, const char *name)
{
	for (size_t i = 0; i < f->spec.ndevs; i++)
		if (strcmp(f->spec.devs[i].name, name) == 0)
			return &f->spec.devs[i];
	return NULL;
}

bool cdi_reg_has_kind(const struct cdi_reg *r, const char *vendor, const char *class)
{
	for (size_t i = 0; i < r->n; i++)
		if (of_kind(&r->files[i], vendor, class))
			return true;
	return false;
}

bool cdi_reg_has(const struct cdi_reg *r, const char *vendor, const char *class,
		 const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (of_kind(&r->files[i], vendor, class) && dev_of(&r->files[i], name) != NULL)
			return true;
	return false;
}

/* "a=0, a=1, ..." of the kind (or every kind's name), bounded. */
static void known(const struct cdi_reg *r, const struct cdi_name *n, char *out, size_t size)
{
	bool kind = cdi_reg_has_kind(r, n->vendor, n->class);
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < r->n; i++) {
		const struct cdi_spec *s = &r->files[i].spec;

		if (kind && !of_kind(&r->files[i], n->vendor, n->class))
			continue;
		for (size_t j = 0; j < s->ndevs && off + 1 < size; j++) {
			int w = snprintf(out + off, size - off, "%s%s/%s=%s", off ? ", " : "",
					 s->vendor, s->class, s->devs[j].name);

			if (w < 0 || (size_t)w >= size - off) {
				if (size > 4)
					memcpy(out + size - 4, "...", 4);
				return;
			}
			off += (size_t)w;
		}
	}
}

/* The file whose device n wins (the last directory's), or NULL; a second
 * definition in that same directory: -1 with e naming both. */
static int find(const struct cdi_reg *r, const struct cdi_name *n, const char *s,
		const struct cdi_file **out, struct err *e)
{
	*out = NULL;
	for (size_t i = 0; i < r->n; i++) {
		const struct cdi_file *f = &r->files[i];

		if (!of_kind(f, n->vendor, n->class) || dev_of(f, n->name) == NULL)
			continue;
		if (*out != NULL && (*out)->dir == f->dir)
			return err_set(e, EXIT_USAGE, "CDI device %s is defined by two specs, %s and "
				       "%s: remove one", s, (*out)->path, f->path);
		*out = f;
	}
	return 0;
}

int cdi_reg_resolve(const struct cdi_reg *r, const struct strv *names, struct cdi_pick **out,
		    size_t *n, struct err *e)
{
	struct cdi_pick *v = names->n > 0 ? calloc(names->n, sizeof(*v)) : NULL;

	*out = NULL;
	*n = 0;
	if (names->n > 0 && v == NULL)
		return err_sys(e, EXIT_CTRUN, "devices");
	for (size_t i = 0; i < names->n; i++) {
		struct cdi_name nm;
		const struct cdi_file *f;
		bool dup = false;

		if (cdi_name_parse(names->v[i], &nm, e) < 0 || find(r, &nm, names->v[i], &f, e) < 0)
			goto fail;
		if (f == NULL) {
			char list[640];

			known(r, &nm, list, sizeof(list));
			if (list[0] == '\0')
				err_set(e, EXIT_USAGE, "unknown CDI device %s: no CDI spec defines any "
					"device (spec directories: see cdi_spec_dirs in ctrun.ini)",
					names->v[i]);
			else
				err_set(e, EXIT_USAGE, "unknown CDI device %s (%s: %s)", names->v[i],
					cdi_reg_has_kind(r, nm.vendor, nm.class) ? "its specs define"
										 : "the specs define",
					list);
			goto fail;
		}
		for (size_t j = 0; j < *n; j++)
			dup |= v[j].file == f && strcmp(v[j].dev->name, nm.name) == 0;
		if (dup)
			continue; /* named twice: applied once */
		v[*n].file = f;
		v[*n].dev = dev_of(f, nm.name);
		v[*n].with_spec = true;
		for (size_t j = 0; j < *n; j++)
			v[*n].with_spec &= v[j].file != f;
		snprintf(v[*n].qname, sizeof(v[*n].qname), "%s/%s=%s", nm.vendor, nm.class,
			 nm.name);
		(*n)++;
	}
	*out = v;
	return 0;
fail:
	free(v);
	*n = 0;
	return -1;
}
