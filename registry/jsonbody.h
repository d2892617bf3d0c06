/* jsonbody.h - a JSON body from the network or a credentials file as one
 * json-c object: exactly len bytes (a body is never trusted to end in a
 * NUL), bounded, no trailing data, bounded nesting; and typed member reads
 * that refuse wrong types, NUL bytes and values too long for their buffer.
 * Shared by the registry's pure parsers (manifest.c, challenge.c, creds.c). */
#ifndef CTRUN_JSONBODY_H
#define CTRUN_JSONBODY_H

#include <json-c/json.h>
#include <stddef.h>

#include "err.h"

/* The object that body (len bytes, at most max) holds; NULL with e set
 * (exit code `code`, messages "WHAT is not valid JSON: ...") otherwise.
 * The caller puts it. */
json_object *jsonbody_parse(const char *body, size_t len, size_t max, int code, const char *what,
			    struct err *e);

/* Member key of o when o is an object and the member has that type, else NULL. */
json_object *jsonbody_get(json_object *o, const char *key, json_type type);

/* Member key of o, a string, into buf: 1 copied, 0 absent (or null), -1
 * another type, a NUL byte in it, or size bytes or longer (e set: "WHAT:
 * KEY ..."). */
int jsonbody_string(json_object *o, const char *key, char *buf, size_t size, int code,
		    const char *what, struct err *e);

#endif
