/* jsonbody.c - bounded JSON bodies and typed member reads (see jsonbody.h). */
#include "jsonbody.h"

#include <stdint.h>
#include <string.h>

/* Deeper than any manifest, index, token answer or auth.json. */
#define JSONBODY_DEPTH 32

json_object *jsonbody_parse(const char *body, size_t len, size_t max, int code, const char *what,
			    struct err *e)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	json_object *o;
	size_t end;

	if (len > max || len > (size_t)INT32_MAX)
		return err_set(e, code, "%s is larger than %zu bytes", what, max), NULL;
	tok = json_tokener_new_ex(JSONBODY_DEPTH);
	if (tok == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what), NULL;
	o = json_tokener_parse_ex(tok, body, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (jerr != json_tokener_success) {
		json_object_put(o);
		return err_set(e, code, "%s is not valid JSON: %s", what,
			       jerr == json_tokener_continue ? "it ends too early"
							     : json_tokener_error_desc(jerr)), NULL;
	}
	/* json-c stops at the end of the first value: anything but blanks after it
	 * is a second document or garbage. */
	for (; end < len; end++) {
		if (strchr(" \t\r\n", body[end]) == NULL || body[end] == '\0') {
			json_object_put(o);
			return err_set(e, code, "%s is not valid JSON: data after the object", what),
			       NULL;
		}
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return err_set(e, code, "%s is not a JSON object", what), NULL;
	}
	return o;
}

json_object *jsonbody_get(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

int jsonbody_string(json_object *o, const char *key, char *buf, size_t size, int code,
		    const char *what, struct err *e)
{
	json_object *v;
	size_t len;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return err_set(e, code, "%s: %s is not a string", what, key);
	len = (size_t)json_object_get_string_len(v);
	if (memchr(json_object_get_string(v), '\0', len) != NULL)
		return err_set(e, code, "%s: %s holds a NUL byte", what, key);
	if (len >= size)
		return err_set(e, code, "%s: %s is longer than %zu bytes", what, key, size - 1);
	memcpy(buf, json_object_get_string(v), len + 1);
	return 1;
}
