/* state.c - parsing the OCI state JSON and config.json (see state.h).
 *
 * json-c does the JSON; this file decides what is acceptable.  Every
 * message names the field, so the one line a runtime logs says what was
 * wrong with the input. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

bool hook_path_is_clean(const char *p)
{
	if (p == NULL || p[0] != '/')
		return false;
	for (const char *c = p + 1; *c != '\0';) {
		size_t len = strcspn(c, "/");

		if (len == 0 && c[len] == '/')
			return false; /* "//" */
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
		if (*c == '/')
			c++;
	}
	return true;
}

/* Parses a whole buffer as one JSON object: no trailing bytes, no NULs,
 * bounded depth. */
static struct json_object *parse_object(const char *buf, size_t len, size_t max,
					const char *what, struct err *e)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t end;

	if (len == 0)
		return err_set(e, EXIT_USAGE, "%s is empty", what), NULL;
	if (len > max)
		return err_set(e, EXIT_USAGE, "%s is larger than %zu bytes", what, max), NULL;
	if (memchr(buf, '\0', len) != NULL)
		return err_set(e, EXIT_USAGE, "%s contains a NUL byte", what), NULL;
	tok = json_tokener_new_ex(64);
	if (tok == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what), NULL;
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (obj == NULL || jerr != json_tokener_success) {
		json_object_put(obj);
		return err_set(e, EXIT_USAGE, "%s is not valid JSON: %s", what,
			       jerr == json_tokener_continue ? "unexpected end of input"
							     : json_tokener_error_desc(jerr)),
		       NULL;
	}
	for (; end < len; end++) {
		if (strchr(" \t\r\n", buf[end]) == NULL) {
			json_object_put(obj);
			return err_set(e, EXIT_USAGE, "%s: unexpected data after the JSON object",
				       what), NULL;
		}
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return err_set(e, EXIT_USAGE, "%s is not a JSON object", what), NULL;
	}
	return obj;
}

/* Copies an optional string member; wrong type is an error. */
static int get_string(struct json_object *o, const char *key, bool required, char **out,
		      const char *what, struct err *e)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		if (required)
			return err_set(e, EXIT_USAGE, "%s: missing \"%s\"", what, key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return err_set(e, EXIT_USAGE, "%s: \"%s\" is not a string", what, key);
	*out = strdup(json_object_get_string(v));
	if (*out == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	return 0;
}

int hook_state_parse(const char *buf, size_t len, struct hook_state *s, struct err *e)
{
	static const char what[] = "OCI state on stdin";
	struct json_object *o, *v;
	int rv = -1;

	memset(s, 0, sizeof(*s));
	o = parse_object(buf, len, HOOK_STATE_MAX, what, e);
	if (o == NULL)
		return -1;
	if (get_string(o, "ociVersion", true, &s->oci_version, what, e) < 0 ||
	    get_string(o, "id", true, &s->id, what, e) < 0 ||
	    get_string(o, "status", false, &s->status, what, e) < 0 ||
	    get_string(o, "bundle", true, &s->bundle, what, e) < 0)
		goto out;
	if (!hook_path_is_clean(s->bundle)) {
		err_set(e, EXIT_USAGE, "%s: bundle '%s' is not a clean absolute path", what,
			s->bundle);
		goto out;
	}
	if (json_object_object_get_ex(o, "pid", &v)) {
		int64_t pid;

		if (!json_object_is_type(v, json_type_int)) {
			err_set(e, EXIT_USAGE, "%s: \"pid\" is not an integer", what);
			goto out;
		}
		errno = 0;
		pid = json_object_get_int64(v);
		if (pid < 0 || pid > (1 << 30) || errno != 0) {
			err_set(e, EXIT_USAGE, "%s: \"pid\" %lld is out of range", what,
				(long long)pid);
			goto out;
		}
		s->pid = (long)pid;
	}
	rv = 0;
out:
	json_object_put(o);
	if (rv < 0)
		hook_state_free(s);
	return rv;
}

void hook_state_free(struct hook_state *s)
{
	free(s->oci_version);
	free(s->id);
	free(s->status);
	free(s->bundle);
	memset(s, 0, sizeof(*s));
}

static int parse_root(struct json_object *o, const char *bundle, struct hook_config *c,
		      struct err *e)
{
	static const char what[] = "config.json";
	struct json_object *root, *ro;
	char *path = NULL;
	int rv = -1;

	if (!json_object_object_get_ex(o, "root", &root) ||
	    !json_object_is_type(root, json_type_object))
		return err_set(e, EXIT_USAGE, "%s: missing \"root\" object", what);
	if (get_string(root, "path", true, &path, what, e) < 0)
		return -1;
	if (path[0] == '/') {
		c->root = path;
		path = NULL;
	} else if (asprintf(&c->root, "%s/%s", bundle, path) < 0) {
		c->root = NULL;
		err_sys(e, EXIT_CTRUN, "%s", what);
		goto out;
	}
	/* A relative root.path is the norm ("rootfs"); dots are not: the rootfs
	 * must be where it says, not somewhere a ".." leads. */
	if (!hook_path_is_clean(c->root)) {
		err_set(e, EXIT_USAGE, "%s: root.path '%s' is not a clean path", what, c->root);
		goto out;
	}
	if (json_object_object_get_ex(root, "readonly", &ro)) {
		if (!json_object_is_type(ro, json_type_boolean)) {
			err_set(e, EXIT_USAGE, "%s: root.readonly is not a boolean", what);
			goto out;
		}
		c->readonly = json_object_get_boolean(ro);
	}
	rv = 0;
out:
	free(path);
	return rv;
}

static int parse_env(struct json_object *o, struct hook_config *c, struct err *e)
{
	struct json_object *proc, *env;

	if (!json_object_object_get_ex(o, "process", &proc) ||
	    json_object_is_type(proc, json_type_null))
		return 0;
	if (!json_object_is_type(proc, json_type_object))
		return err_set(e, EXIT_USAGE, "config.json: \"process\" is not an object");
	if (!json_object_object_get_ex(proc, "env", &env) || json_object_is_type(env, json_type_null))
		return 0;
	if (!json_object_is_type(env, json_type_array))
		return err_set(e, EXIT_USAGE, "config.json: process.env is not an array");
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		struct json_object *kv = json_object_array_get_idx(env, i);

		if (!json_object_is_type(kv, json_type_string))
			return err_set(e, EXIT_USAGE, "config.json: process.env[%zu] is not a string",
				       i);
		if (strv_push(&c->env, json_object_get_string(kv)) < 0)
			return err_sys(e, EXIT_CTRUN, "config.json");
	}
	return 0;
}

static int parse_annotations(struct json_object *o, struct hook_config *c, struct err *e)
{
	static const char what[] = "config.json annotations";
	struct json_object *ann;
	char *enabled = NULL;

	if (!json_object_object_get_ex(o, "annotations", &ann) ||
	    json_object_is_type(ann, json_type_null))
		return 0;
	if (!json_object_is_type(ann, json_type_object))
		return err_set(e, EXIT_USAGE, "config.json: \"annotations\" is not an object");
	if (get_string(ann, HOOK_ANN_GPUS, false, &c->ann_gpus, what, e) < 0 ||
	    get_string(ann, HOOK_ANN_MODE, false, &c->ann_mode, what, e) < 0 ||
	    get_string(ann, HOOK_ANN_IMEX, false, &c->ann_imex, what, e) < 0 ||
	    get_string(ann, HOOK_ANN_ENABLED, false, &enabled, what, e) < 0) {
		free(enabled);
		return -1;
	}
	c->enabled = enabled != NULL && strcmp(enabled, "true") == 0;
	free(enabled);
	if (c->ann_mode != NULL && strcmp(c->ann_mode, "node") != 0 &&
	    strcmp(c->ann_mode, "task") != 0)
		return err_set(e, EXIT_USAGE, "%s: %s '%s' is not node or task", what, HOOK_ANN_MODE,
			       c->ann_mode);
	return 0;
}

int hook_config_parse(const char *buf, size_t len, const char *bundle, struct hook_config *c,
		      struct err *e)
{
	struct json_object *o;
	int rv = -1;

	memset(c, 0, sizeof(*c));
	o = parse_object(buf, len, HOOK_CONFIG_MAX, "config.json", e);
	if (o == NULL)
		return -1;
	if (parse_root(o, bundle, c, e) < 0 || parse_env(o, c, e) < 0 ||
	    parse_annotations(o, c, e) < 0)
		goto out;
	rv = 0;
out:
	json_object_put(o);
	if (rv < 0)
		hook_config_free(c);
	return rv;
}

int hook_config_load(const char *bundle, struct hook_config *c, struct err *e)
{
	char path[4096];
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, rv = -1;

	memset(c, 0, sizeof(*c));
	if (xsnprintf(path, sizeof(path), "%s/config.json", bundle) < 0)
		return err_set(e, EXIT_USAGE, "bundle path too long: %s", bundle);
	/* The bundle is the runtime's directory; config.json must be a file
	 * there, not a link to somewhere else. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return err_sys(e, EXIT_USAGE, "bundle %s: cannot open config.json", bundle);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err_set(e, EXIT_USAGE, "bundle %s: config.json is not a regular file", bundle);
		goto out;
	}
	buf = read_fd_max(fd, HOOK_CONFIG_MAX + 1, &len);
	if (buf == NULL) {
		if (errno == ENOMEM)
			err_sys(e, EXIT_CTRUN, "%s", path);
		else
			err_sys(e, EXIT_USAGE, "read %s", path);
		goto out;
	}
	if (len > HOOK_CONFIG_MAX) {
		err_set(e, EXIT_USAGE, "%s is larger than %u bytes", path, HOOK_CONFIG_MAX);
		goto out;
	}
	rv = hook_config_parse(buf, len, bundle, c, e);
out:
	free(buf);
	close(fd);
	return rv;
}

void hook_config_free(struct hook_config *c)
{
	free(c->root);
	strv_free(&c->env);
	free(c->ann_gpus);
	free(c->ann_mode);
	free(c->ann_imex);
	memset(c, 0, sizeof(*c));
}
