/* cdispec.c - one CDI spec file checked into a struct (cdispec.h): the
 * fields of SPEC.md, the library's Validate rules, and its minimum
 * version per field (specs-go/version.go). */
#include "cdispec.h"

#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const cdi_stage_names[CDI_STAGES] = { "prestart", "createRuntime",
						  "createContainer", "startContainer",
						  "poststart", "poststop" };
const char *const cdi_versions[] = { "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0",
				     "0.7.0", "0.8.0", "1.0.0", "1.1.0", NULL };
enum { V040 = 3, V050 = 4, V060 = 5, V070 = 6, V110 = 9 };

/* Where in the file a value is, for the messages. */
struct at {
	const char *file;
	struct err *e;
	int need; /* the index in cdi_versions that the fields used need */
	const char *needs; /* the field that needs it */
};

static int bad(struct at *a, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct at *a, const char *where, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(a->e, EXIT_USAGE, "CDI spec %s: %s%s%s", a->file, where,
		       where[0] != '\0' ? ": " : "", what);
}

static void needs(struct at *a, int v, const char *field)
{
	if (v > a->need) {
		a->need = v;
		a->needs = field;
	}
}

/* Only the keys listed (NULL-ended) are allowed in o. */
static int keys_only(struct at *a, const char *where, json_object *o, const char *const *ok)
{
	json_object_object_foreach(o, k, v) {
		const char *const *p = ok;

		(void)v;
		while (*p != NULL && strcmp(*p, k) != 0)
			p++;
		if (*p == NULL)
			return bad(a, where, "unknown field '%s'", k);
	}
	return 0;
}

static json_object *field(json_object *o, const char *k)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* A string field: NULL (absent or null) allowed unless required. */
static int str(struct at *a, const char *where, json_object *o, const char *k, bool required,
	       char **out)
{
	json_object *v = field(o, k);

	*out = NULL;
	if (v == NULL) {
		if (required)
			return bad(a, where, "'%s' is missing", k);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return bad(a, where, "'%s' must be a string", k);
	if (required && json_object_get_string_len(v) == 0)
		return bad(a, where, "'%s' is empty", k);
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return bad(a, where, "'%s' holds a NUL byte", k);
	*out = strdup(json_object_get_string(v));
	return *out == NULL ? err_sys(a->e, EXIT_CTRUN, "%s", a->file) : 0;
}

static int integer(struct at *a, const char *where, json_object *v, const char *k,
		   long long min, long long max, long long *out)
{
	int64_t n;

	if (!json_object_is_type(v, json_type_int))
		return bad(a, where, "'%s' must be an integer", k);
	errno = 0;
	n = json_object_get_int64(v);
	if (errno != 0 || n < min || n > max)
		return bad(a, where, "'%s' is out of range (%lld..%lld)", k, min, max);
	*out = n;
	return 0;
}

/* An array of strings; envlike: each K=V with a non-empty K. */
static int strs(struct at *a, const char *where, json_object *o, const char *k, bool envlike,
		struct strv *out)
{
	json_object *v = field(o, k);

	if (v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(a, where, "'%s' must be a list of strings", k);
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *s = json_object_array_get_idx(v, i);
		const char *t = json_object_get_string(s);

		if (!json_object_is_type(s, json_type_string) ||
		    strlen(t) != (size_t)json_object_get_string_len(s))
			return bad(a, where, "'%s'[%zu] must be a string", k, i);
		if (envlike && (t[0] == '=' || strchr(t, '=') == NULL))
			return bad(a, where, "'%s'[%zu] '%s' is not NAME=VALUE", k, i, t);
		if (strv_push(out, t) < 0)
			return err_sys(a->e, EXIT_CTRUN, "%s", a->file);
	}
	return 0;
}

/* The array field k of o (NULL: absent), its length in *n. */
static int array(struct at *a, const char *where, json_object *o, const char *k,
		 json_object **out, size_t *n)
{
	*out = field(o, k);
	*n = 0;
	if (*out == NULL)
		return 0;
	if (!json_object_is_type(*out, json_type_array))
		return bad(a, where, "'%s' must be a list", k);
	*n = json_object_array_length(*out);
	return 0;
}

static int object(struct at *a, const char *where, json_object *v)
{
	return json_object_is_type(v, json_type_object) ? 0 : bad(a, where, "must be a mapping");
}

static int node(struct at *a, const char *where, json_object *o, struct cdi_node *n)
{
	static const char *const ok[] = { "path", "hostPath", "type", "major", "minor",
					  "fileMode", "permissions", "uid", "gid", NULL };
	char *type = NULL, *perms = NULL;
	json_object *v;
	long long x;
	int rv = -1;

	if (object(a, where, o) < 0 || keys_only(a, where, o, ok) < 0 ||
	    str(a, where, o, "path", true, &n->path) < 0 ||
	    str(a, where, o, "hostPath", false, &n->host_path) < 0 ||
	    str(a, where, o, "type", false, &type) < 0 ||
	    str(a, where, o, "permissions", false, &perms) < 0)
		goto out;
	if (n->host_path != NULL && n->host_path[0] != '\0')
		needs(a, V050, "deviceNodes hostPath");
	if (n->host_path != NULL && n->host_path[0] == '\0') {
		free(n->host_path);
		n->host_path = NULL;
	}
	if (type != NULL && type[0] != '\0' &&
	    (strlen(type) != 1 || strchr("bcup", type[0]) == NULL)) {
		bad(a, where, "type '%s' is not b, c, u or p", type);
		goto out;
	}
	n->type = type != NULL ? type[0] : 0;
	if (perms != NULL && strcmp(perms, "none") != 0 &&
	    (strlen(perms) > 3 || strspn(perms, "rwm") != strlen(perms))) {
		bad(a, where, "permissions '%s' is not made of r, w and m (or 'none')", perms);
		goto out;
	}
	snprintf(n->perms, sizeof(n->perms), "%s", perms != NULL ? perms : "");
	if ((v = field(o, "major")) != NULL && integer(a, where, v, "major", 0, UINT32_MAX,
						     &n->major) < 0)
		goto out;
	if ((v = field(o, "minor")) != NULL && integer(a, where, v, "minor", 0, UINT32_MAX,
						     &n->minor) < 0)
		goto out;
	if ((v = field(o, "fileMode")) != NULL) {
		if (integer(a, where, v, "fileMode", 0, 07777, &x) < 0)
			goto out;
		n->has_mode = true;
		n->mode = (unsigned)x;
	}
	if ((v = field(o, "uid")) != NULL) {
		if (integer(a, where, v, "uid", 0, UINT32_MAX, &x) < 0)
			goto out;
		n->has_uid = true;
		n->uid = (unsigned)x;
	}
	if ((v = field(o, "gid")) != NULL) {
		if (integer(a, where, v, "gid", 0, UINT32_MAX, &x) < 0)
			goto out;
		n->has_gid = true;
		n->gid = (unsigned)x;
	}
	rv = 0;
out:
	free(type);
	free(perms);
	return rv;
}

static int mount(struct at *a, const char *where, json_object *o, struct cdi_mount *m)
{
	static const char *const ok[] = { "hostPath", "containerPath", "type", "options", NULL };

	if (object(a, where, o) < 0 || keys_only(a, where, o, ok) < 0 ||
	    str(a, where, o, "hostPath", true, &m->host_path) < 0 ||
	    str(a, where, o, "containerPath", true, &m->container_path) < 0 ||
	    str(a, where, o, "type", false, &m->type) < 0 ||
	    strs(a, where, o, "options", false, &m->options) < 0)
		return -1;
	if (m->type != NULL && m->type[0] != '\0')
		needs(a, V040, "mounts type");
	return 0;
}

static int hook(struct at *a, const char *where, json_object *o, struct cdi_hook *h)
{
	static const char *const ok[] = { "hookName", "path", "args", "env", "timeout", NULL };
	char *name = NULL;
	json_object *v;
	long long t;
	int s;

	if (object(a, where, o) < 0 || keys_only(a, where, o, ok) < 0 ||
	    str(a, where, o, "hookName", true, &name) < 0)
		return -1;
	for (s = 0; s < CDI_STAGES && strcmp(cdi_stage_names[s], name) != 0; s++)
		;
	if (s == CDI_STAGES) {
		bad(a, where, "hookName '%s' is not an OCI hook stage (prestart, createRuntime, "
		    "createContainer, startContainer, poststart, poststop)", name);
		free(name);
		return -1;
	}
	free(name);
	h->stage = (enum cdi_stage)s;
	if (str(a, where, o, "path", true, &h->path) < 0 ||
	    strs(a, where, o, "args", false, &h->args) < 0 ||
	    strs(a, where, o, "env", true, &h->env) < 0)
		return -1;
	/* SPEC.md: the path MUST be absolute. */
	if (h->path[0] != '/')
		return bad(a, where, "hook path '%s' is not absolute", h->path);
	if ((v = field(o, "timeout")) != NULL) {
		if (integer(a, where, v, "timeout", 1, INT32_MAX, &t) < 0)
			return -1;
		h->timeout = (long)t;
	}
	return 0;
}

/* One list of objects of edits e (kind: "deviceNodes", ...). */
#define EACH(a, where, o, key, arr, n, item, fn)                                            \
	do {                                                                                 \
		json_object *arr_;                                                           \
		if (array(a, where, o, key, &arr_, &n) < 0)                                  \
			return -1;                                                           \
		if (n > 0 && (arr = calloc(n, sizeof(*arr))) == NULL)                        \
			return err_sys((a)->e, EXIT_CTRUN, "%s", (a)->file);                 \
		for (size_t i_ = 0; i_ < n; i_++) {                                          \
			char w_[256];                                                        \
			snprintf(w_, sizeof(w_), "%s.%s[%zu]", where, key, i_);              \
			if (fn(a, w_, json_object_array_get_idx(arr_, i_), &arr[i_]) < 0)    \
				return -1;                                                   \
		}                                                                            \
	} while (0)

static int gids(struct at *a, const char *where, json_object *o, struct cdi_edits *d)
{
	json_object *arr;
	size_t n;

	if (array(a, where, o, "additionalGids", &arr, &n) < 0)
		return -1;
	if (n == 0)
		return 0;
	needs(a, V070, "additionalGids");
	if ((d->gids = calloc(n, sizeof(*d->gids))) == NULL)
		return err_sys(a->e, EXIT_CTRUN, "%s", a->file);
	for (size_t i = 0; i < n; i++) {
		long long g;

		if (integer(a, where, json_object_array_get_idx(arr, i), "additionalGids", 0,
			    UINT32_MAX, &g) < 0)
			return -1;
		/* SPEC.md: a 0 is ignored; a repeated one is added once. */
		bool seen = g == 0;

		for (size_t j = 0; j < d->ngids; j++)
			seen |= d->gids[j] == (unsigned)g;
		if (!seen)
			d->gids[d->ngids++] = (unsigned)g;
	}
	return 0;
}

static int rdt_net(struct at *a, const char *where, json_object *o, struct cdi_edits *d)
{
	static const char *const rdt_ok[] = { "closID", "l3CacheSchema", "memBwSchema",
					      "schemata", "enableMonitoring", NULL };
	json_object *v = field(o, "intelRdt"), *m;

	if (v != NULL) {
		if (object(a, where, v) < 0 || keys_only(a, where, v, rdt_ok) < 0)
			return -1;
		d->intel_rdt = true;
		needs(a, V070, "intelRdt");
		if (field(v, "schemata") != NULL ||
		    ((m = field(v, "enableMonitoring")) != NULL && json_object_get_boolean(m)))
			needs(a, V110, "intelRdt schemata/enableMonitoring");
	}
	if ((v = field(o, "netDevices")) != NULL) {
		if (!json_object_is_type(v, json_type_array))
			return bad(a, where, "'netDevices' must be a list");
		if (json_object_array_length(v) > 0) {
			d->net_devices = true;
			needs(a, V110, "netDevices");
		}
	}
	return 0;
}

static int edits(struct at *a, const char *where, json_object *o, struct cdi_edits *d)
{
	static const char *const ok[] = { "env", "deviceNodes", "mounts", "hooks",
					  "additionalGids", "intelRdt", "netDevices", NULL };

	if (o == NULL)
		return 0;
	if (object(a, where, o) < 0 || keys_only(a, where, o, ok) < 0 ||
	    strs(a, where, o, "env", true, &d->env) < 0)
		return -1;
	EACH(a, where, o, "deviceNodes", d->nodes, d->nnodes, node_, node);
	EACH(a, where, o, "mounts", d->mounts, d->nmounts, mount_, mount);
	EACH(a, where, o, "hooks", d->hooks, d->nhooks, hook_, hook);
	return gids(a, where, o, d) < 0 || rdt_net(a, where, o, d) < 0 ? -1 : 0;
}

static bool edits_empty(const struct cdi_edits *d)
{
	return d->env.n == 0 && d->nnodes == 0 && d->nmounts == 0 && d->nhooks == 0 &&
	       d->ngids == 0 && !d->intel_rdt && !d->net_devices;
}

static int annotations(struct at *a, const char *where, json_object *o)
{
	json_object *v = field(o, "annotations");

	if (v == NULL)
		return 0;
	if (object(a, where, v) < 0)
		return -1;
	json_object_object_foreach(v, k, val)
		if (!json_object_is_type(val, json_type_string))
			return bad(a, where, "annotation '%s' must be a string", k);
	if (json_object_object_length(v) > 0)
		needs(a, V060, "annotations");
	return 0;
}

static int device(struct at *a, const char *where, json_object *o, struct cdi_device *d)
{
	static const char *const ok[] = { "name", "annotations", "containerEdits", NULL };
	const char *why;

	if (object(a, where, o) < 0 || keys_only(a, where, o, ok) < 0 ||
	    str(a, where, o, "name", true, &d->name) < 0)
		return -1;
	if ((why = cdi_device_name_invalid(d->name)) != NULL)
		return bad(a, where, "device name '%s': %s", d->name, why);
	if (d->name[0] >= '0' && d->name[0] <= '9')
		needs(a, V050, "a device name starting with a digit");
	if (annotations(a, where, o) < 0 ||
	    edits(a, where, field(o, "containerEdits"), &d->edits) < 0)
		return -1;
	if (edits_empty(&d->edits))
		return bad(a, where, "device '%s' has no containerEdits", d->name);
	return 0;
}

static int devices(struct at *a, json_object *o, struct cdi_spec *s)
{
	EACH(a, "", o, "devices", s->devs, s->ndevs, dev_, device);
	return 0;
}

static int version(struct at *a, const char *v, char **out)
{
	const char *s = v[0] == 'v' ? v + 1 : v;

	for (size_t i = 0; cdi_versions[i] != NULL; i++)
		if (strcmp(cdi_versions[i], s) == 0) {
			*out = strdup(s);
			return *out == NULL ? err_sys(a->e, EXIT_CTRUN, "%s", a->file) : (int)i;
		}
	return bad(a, "cdiVersion", "'%s' is not a CDI version (%s to %s)", v, cdi_versions[0],
		   "1.1.0");
}

static int spec(struct at *a, json_object *o, struct cdi_spec *s)
{
	static const char *const ok[] = { "cdiVersion", "kind", "annotations", "devices",
					  "containerEdits", NULL };
	char *v = NULL, *kind = NULL;
	int vi, rv = -1;

	if (object(a, "", o) < 0 || keys_only(a, "", o, ok) < 0 ||
	    str(a, "", o, "cdiVersion", true, &v) < 0 || str(a, "", o, "kind", true, &kind) < 0 ||
	    (vi = version(a, v, &s->version)) < 0)
		goto out;
	if (cdi_kind_parse(kind, s->vendor, s->class, sizeof(s->vendor), a->e) < 0) {
		err_wrap(a->e, "CDI spec %s", a->file);
		goto out;
	}
	if (strchr(s->class, '.') != NULL)
		needs(a, V060, "a '.' in the kind's class");
	if (annotations(a, "", o) < 0 || edits(a, "containerEdits", field(o, "containerEdits"),
					      &s->edits) < 0)
		goto out;
	if (devices(a, o, s) < 0)
		goto out;
	if (s->ndevs == 0) {
		bad(a, "devices", "no devices (a spec needs at least one)");
		goto out;
	}
	for (size_t i = 0; i < s->ndevs; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->devs[i].name, s->devs[j].name) == 0) {
				bad(a, "devices", "device '%s' is defined twice", s->devs[i].name);
				goto out;
			}
	if (a->need > vi) {
		bad(a, "cdiVersion", "%s uses %s, which needs cdiVersion %s or later", v, a->needs,
		    cdi_versions[a->need]);
		goto out;
	}
	rv = 0;
out:
	free(v);
	free(kind);
	return rv;
}

/* json-c's error offset as a line number. */
static size_t line_of(const char *data, size_t off)
{
	size_t line = 1;

	for (size_t i = 0; i < off; i++)
		line += data[i] == '\n';
	return line;
}

static json_object *json_tree(const char *data, size_t len, const char *path, struct err *e)
{
	json_tokener *tok;
	json_object *o;
	size_t off;

	if (len > INT_MAX || memchr(data, '\0', len) != NULL) {
		err_set(e, EXIT_USAGE, "CDI spec %s: not a JSON text (NUL byte or too large)", path);
		return NULL;
	}
	if ((tok = json_tokener_new_ex(64)) == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, data, (int)len);
	off = json_tokener_get_parse_end(tok);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    strspn(data + off, " \t\r\n") != len - off) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		err_set(e, EXIT_USAGE, "CDI spec %s:%zu: does not parse as JSON: %s", path,
			line_of(data, off),
			o == NULL ? (je == json_tokener_continue ? "unexpected end"
								 : json_tokener_error_desc(je))
				  : "data after the end");
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

int cdi_spec_parse(const char *data, size_t len, bool yaml, const char *path,
		   struct cdi_spec *out, struct err *e)
{
	struct at a = { .file = path, .e = e, .need = 0, .needs = "" };
	json_object *o;
	int rv;

	memset(out, 0, sizeof(*out));
	o = yaml ? cdi_yaml_tree(data, len, path, e) : json_tree(data, len, path, e);
	if (o == NULL) {
		if (yaml)
			err_wrap(e, "CDI spec");
		return -1;
	}
	rv = spec(&a, o, out);
	json_object_put(o);
	if (rv < 0)
		cdi_spec_free(out);
	return rv;
}

void cdi_edits_free(struct cdi_edits *d)
{
	strv_free(&d->env);
	for (size_t i = 0; i < d->nnodes; i++) {
		free(d->nodes[i].path);
		free(d->nodes[i].host_path);
	}
	for (size_t i = 0; i < d->nmounts; i++) {
		free(d->mounts[i].host_path);
		free(d->mounts[i].container_path);
		free(d->mounts[i].type);
		strv_free(&d->mounts[i].options);
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
	memset(d, 0, sizeof(*d));
}

void cdi_spec_free(struct cdi_spec *s)
{
	free(s->version);
	for (size_t i = 0; i < s->ndevs; i++) {
		free(s->devs[i].name);
		cdi_edits_free(&s->devs[i].edits);
	}
	free(s->devs);
	cdi_edits_free(&s->edits);
	memset(s, 0, sizeof(*s));
}
