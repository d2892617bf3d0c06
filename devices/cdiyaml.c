/* cdiyaml.c - YAML into a json-c tree (cdispec.h), through libyaml's
 * event parser: the CDI library reads YAML and JSON alike
 * (sigs.k8s.io/yaml), so ctrun turns YAML into the tree json-c gives for
 * JSON and checks one tree. */
#include "cdispec.h"

#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

#define DEPTH_MAX 64

struct ystack {
	json_object *node[DEPTH_MAX + 1];
	char *key[DEPTH_MAX + 1]; /* a mapping's pending key */
	size_t n;
};

/* A plain scalar as YAML 1.1 types it (what go-yaml v2 does). */
static json_object *plain(const char *s)
{
	long long v;
	char *end;
	const char *digits = s + (s[0] == '-' || s[0] == '+');

	if (strcmp(s, "") == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	    strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0)
		return NULL;
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
		return json_object_new_boolean(1);
	if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
		return json_object_new_boolean(0);
	if (digits[0] >= '0' && digits[0] <= '9') {
		int base = 10;

		if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
			base = 16;
		else if (digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O'))
			base = -8;
		else if (digits[0] == '0' && digits[1] != '\0')
			base = 8;
		errno = 0;
		if (base == -8) {
			v = strtoll(digits + 2, &end, 8);
			if (s[0] == '-')
				v = -v;
		} else {
			v = strtoll(s, &end, base);
		}
		if (errno == 0 && *end == '\0' && end != digits)
			return json_object_new_int64(v);
	}
	return json_object_new_string(s);
}

/* Adds v to the container on top (or makes it the document). */
static int attach(struct ystack *st, json_object **doc, json_object *v, bool is_null,
		  const char *path, size_t line, struct err *e)
{
	json_object *top;

	if (st->n == 0) {
		*doc = v;
		return 0;
	}
	top = st->node[st->n - 1];
	if (json_object_is_type(top, json_type_array))
		return json_object_array_add(top, v) < 0 ? err_sys(e, EXIT_CTRUN, "%s", path) : 0;
	if (st->key[st->n - 1] == NULL) {
		/* v is a key: only a scalar may be one. */
		if (v == NULL && !is_null)
			return err_set(e, EXIT_USAGE, "%s:%zu: a mapping key must be a scalar", path,
				       line);
		st->key[st->n - 1] = strdup(v != NULL ? json_object_get_string(v) : "");
		json_object_put(v);
		return st->key[st->n - 1] == NULL ? err_sys(e, EXIT_CTRUN, "%s", path) : 0;
	}
	if (json_object_object_get_ex(top, st->key[st->n - 1], NULL)) {
		err_set(e, EXIT_USAGE, "%s:%zu: key '%s' appears twice", path, line,
			st->key[st->n - 1]);
		json_object_put(v);
		return -1;
	}
	if (json_object_object_add(top, st->key[st->n - 1], v) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	free(st->key[st->n - 1]);
	st->key[st->n - 1] = NULL;
	return 0;
}

static int event(struct ystack *st, json_object **doc, const yaml_event_t *ev, int *docs,
		 const char *path, struct err *e)
{
	size_t line = ev->start_mark.line + 1;
	json_object *v;

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return err_set(e, EXIT_USAGE, "%s:%zu: YAML aliases are not taken in a CDI spec",
			       path, line);
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1)
			return err_set(e, EXIT_USAGE, "%s:%zu: more than one YAML document", path,
				       line);
		return 0;
	case YAML_SCALAR_EVENT: {
		const char *s = (const char *)ev->data.scalar.value;
		bool quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;

		if (ev->data.scalar.tag != NULL && !ev->data.scalar.quoted_implicit &&
		    !ev->data.scalar.plain_implicit)
			return err_set(e, EXIT_USAGE, "%s:%zu: YAML tags are not taken in a CDI spec",
				       path, line);
		if (strlen(s) != ev->data.scalar.length)
			return err_set(e, EXIT_USAGE, "%s:%zu: a NUL byte in a value", path, line);
		v = quoted ? json_object_new_string(s) : plain(s);
		if (v == NULL && quoted)
			return err_sys(e, EXIT_CTRUN, "%s", path);
		return attach(st, doc, v, !quoted && v == NULL, path, line, e);
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (st->n >= DEPTH_MAX)
			return err_set(e, EXIT_USAGE, "%s:%zu: nested more than %d levels deep", path,
				       line, DEPTH_MAX);
		v = ev->type == YAML_SEQUENCE_START_EVENT ? json_object_new_array()
							  : json_object_new_object();
		if (v == NULL)
			return err_sys(e, EXIT_CTRUN, "%s", path);
		if (attach(st, doc, json_object_get(v), false, path, line, e) < 0) {
			json_object_put(v);
			return -1;
		}
		st->node[st->n] = v;
		st->key[st->n] = NULL;
		st->n++;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		st->n--;
		json_object_put(st->node[st->n]);
		free(st->key[st->n]);
		st->key[st->n] = NULL;
		return 0;
	default:
		return 0;
	}
}

json_object *cdi_yaml_tree(const char *data, size_t len, const char *path, struct err *e)
{
	yaml_parser_t p;
	struct ystack st = { .n = 0 };
	json_object *doc = NULL;
	int docs = 0, rv = 0;
	bool done = false;

	if (memchr(data, '\0', len) != NULL) {
		err_set(e, EXIT_USAGE, "%s: a NUL byte: not a YAML text", path);
		return NULL;
	}
	if (!yaml_parser_initialize(&p)) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	while (!done && rv == 0) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&p, &ev)) {
			rv = err_set(e, EXIT_USAGE, "%s:%zu: does not parse as YAML: %s", path,
				     p.problem_mark.line + 1,
				     p.problem != NULL ? p.problem : "syntax error");
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rv = event(&st, &doc, &ev, &docs, path, e);
		yaml_event_delete(&ev);
	}
	while (st.n > 0) {
		st.n--;
		json_object_put(st.node[st.n]);
		free(st.key[st.n]);
	}
	yaml_parser_delete(&p);
	if (rv < 0) {
		json_object_put(doc);
		return NULL;
	}
	if (doc == NULL)
		err_set(e, EXIT_USAGE, "%s: empty: no CDI spec in it", path);
	return doc;
}
