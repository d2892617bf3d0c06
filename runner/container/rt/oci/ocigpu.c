/* ocigpu.c - an OCI config.json wired to ctrun-hook for exactly the
 * container's GPUs (oci.h): the OCI driver's plan, and `ctrun hooks
 * configure BUNDLE`. */
#include "oci.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strv.h"
#include "util.h"

#define NVIDIA_MAJOR 195

/* obj[key] as an object or array, created when absent. */
static struct json_object *child(struct json_object *obj, const char *key, json_type type)
{
	struct json_object *c;

	if (json_object_object_get_ex(obj, key, &c) && json_object_is_type(c, type))
		return c;
	c = type == json_type_array ? json_object_new_array() : json_object_new_object();
	if (c == NULL || json_object_object_add(obj, key, c) < 0)
		return NULL;
	return c;
}

/* A copy of array `a` without the elements `drop` says no to. */
static struct json_object *filtered(struct json_object *a,
				    bool (*drop)(struct json_object *el, const void *arg),
				    const void *arg)
{
	struct json_object *n = json_object_new_array();

	for (size_t i = 0; n != NULL && i < json_object_array_length(a); i++) {
		struct json_object *el = json_object_array_get_idx(a, i);

		if (!drop(el, arg) && json_object_array_add(n, json_object_get(el)) < 0) {
			json_object_put(n);
			return NULL;
		}
	}
	return n;
}

static bool is_our_hook(struct json_object *el, const void *path)
{
	struct json_object *p;

	return json_object_object_get_ex(el, "path", &p) &&
	       strcmp(json_object_get_string(p), path) == 0;
}

static bool is_gpu_env(struct json_object *el, const void *arg)
{
	const char *s = json_object_get_string(el);

	(void)arg;
	return s != NULL && (strncmp(s, "CUDA_VISIBLE_DEVICES=", 21) == 0 ||
			     strncmp(s, "NVIDIA_VISIBLE_DEVICES=", 23) == 0);
}

/* The driver's dynamic character majors (/proc/devices): nvidia-uvm, and
 * for MIG and IMEX nvidia-caps and nvidia-caps-imex-channels; -1 if none. */
enum { MAJ_UVM, MAJ_CAPS, MAJ_IMEX, NMAJ };
static const char *const major_names[NMAJ] = { "nvidia-uvm", "nvidia-caps",
					       "nvidia-caps-imex-channels" };

static bool is_gpu_rule(struct json_object *el, const void *arg)
{
	const long *majors = arg;
	struct json_object *major;
	long m;

	if (!json_object_object_get_ex(el, "major", &major))
		return false;
	m = (long)json_object_get_int64(major);
	for (int i = 0; i < NMAJ; i++)
		if (majors[i] > 0 && m == majors[i])
			return true;
	return m == NVIDIA_MAJOR;
}

static void driver_majors(long *out)
{
	char *text = read_file("/proc/devices", NULL), *line;

	for (int i = 0; i < NMAJ; i++)
		out[i] = -1;
	if (text == NULL)
		return;
	for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		char name[64];
		long m;

		if (strcmp(line, "Block devices:") == 0)
			break;
		for (int i = 0; i < NMAJ; i++)
			if (sscanf(line, "%ld %63s", &m, name) == 2 && strcmp(name, major_names[i]) == 0)
				out[i] = m;
	}
	free(text);
}

/* MIG devices are named by UUID inside (CUDA numbers MIG devices by what
 * the process may use, not as the host does). */
static bool is_mig(const char *id)
{
	return strncmp(id, "MIG-", 4) == 0;
}

static int add_rule(struct json_object *devices, long major, long minor)
{
	struct json_object *r = json_object_new_object();

	if (r == NULL)
		return -1;
	json_object_object_add(r, "allow", json_object_new_boolean(1));
	json_object_object_add(r, "type", json_object_new_string("c"));
	json_object_object_add(r, "major", json_object_new_int64(major));
	if (minor >= 0)
		json_object_object_add(r, "minor", json_object_new_int64(minor));
	json_object_object_add(r, "access", json_object_new_string("rwm"));
	return json_object_array_add(devices, r);
}

static int set_env(struct json_object *proc, const struct strv *gpus, const char *ids)
{
	struct json_object *env = child(proc, "env", json_type_array), *n;
	char cvd[1100] = "CUDA_VISIBLE_DEVICES=", nvd[1100];
	size_t off = strlen(cvd);

	if (env == NULL || (n = filtered(env, is_gpu_env, NULL)) == NULL)
		return -1;
	for (size_t i = 0; i < gpus->n; i++) {
		int w = is_mig(gpus->v[i])
			? snprintf(cvd + off, sizeof(cvd) - off, "%s%s", i ? "," : "", gpus->v[i])
			: snprintf(cvd + off, sizeof(cvd) - off, "%s%zu", i ? "," : "", i);

		if (w < 0 || (size_t)w >= sizeof(cvd) - off)
			goto fail;
		off += (size_t)w;
	}
	if (xsnprintf(nvd, sizeof(nvd), "NVIDIA_VISIBLE_DEVICES=%s", ids) < 0 ||
	    json_object_array_add(n, json_object_new_string(cvd)) < 0 ||
	    json_object_array_add(n, json_object_new_string(nvd)) < 0)
		goto fail;
	return json_object_object_add(proc, "env", n);
fail:
	json_object_put(n);
	return -1;
}

static int set_devices(struct json_object *config, const struct strv *gpus, const char *imex)
{
	struct json_object *linux_ = child(config, "linux", json_type_object), *res, *devs, *n;
	long majors[NMAJ];
	bool mig = false;

	driver_majors(majors);
	if (linux_ == NULL || (res = child(linux_, "resources", json_type_object)) == NULL ||
	    (devs = child(res, "devices", json_type_array)) == NULL ||
	    (n = filtered(devs, is_gpu_rule, majors)) == NULL)
		return -1;
	for (size_t i = 0; i < gpus->n; i++) {
		long minor;

		/* A UUID's minor is the hook's to find: allow the whole major. */
		if (parse_long(gpus->v[i], 0, 254, &minor) < 0)
			minor = -1;
		mig |= is_mig(gpus->v[i]);
		if (add_rule(n, NVIDIA_MAJOR, minor) < 0)
			goto fail;
	}
	/* MIG's capability nodes and IMEX channels: the hook binds exactly
	 * the container's, whose minors only it finds. */
	if (add_rule(n, NVIDIA_MAJOR, 255) < 0 || add_rule(n, NVIDIA_MAJOR, 254) < 0 ||
	    (majors[MAJ_UVM] > 0 && add_rule(n, majors[MAJ_UVM], -1) < 0) ||
	    (mig && majors[MAJ_CAPS] > 0 && add_rule(n, majors[MAJ_CAPS], -1) < 0) ||
	    (imex != NULL && majors[MAJ_IMEX] > 0 && add_rule(n, majors[MAJ_IMEX], -1) < 0))
		goto fail;
	return json_object_object_add(res, "devices", n);
fail:
	json_object_put(n);
	return -1;
}

int oci_gpu_config(struct json_object *config, const struct strv *gpus,
		       const char *hook_path, const char *imex, struct err *e)
{
	struct json_object *ann, *hooks, *cc, *hook, *args, *n, *proc;
	char ids[1024];

	if (gpus->n == 0)
		return 0;
	if (hook_path[0] != '/')
		return err_set(e, EXIT_CTRUN, "ctrun-hook path '%s' is not absolute", hook_path);
	if (strv_join(gpus, ids, sizeof(ids)) < 0)
		return err_set(e, EXIT_CTRUN, "too many GPUs for one container");
	ann = child(config, "annotations", json_type_object);
	hooks = child(config, "hooks", json_type_object);
	proc = child(config, "process", json_type_object);
	cc = hooks != NULL ? child(hooks, "createContainer", json_type_array) : NULL;
	if (ann == NULL || cc == NULL || proc == NULL)
		goto nomem;
	json_object_object_add(ann, GPU_PIN_ANN_ENABLED, json_object_new_string("true"));
	json_object_object_add(ann, GPU_PIN_ANN_GPUS, json_object_new_string(ids));
	if (imex != NULL)
		json_object_object_add(ann, GPU_PIN_ANN_IMEX, json_object_new_string(imex));
	hook = json_object_new_object();
	args = json_object_new_array();
	n = filtered(cc, is_our_hook, hook_path);
	if (hook == NULL || args == NULL || n == NULL) {
		json_object_put(hook);
		json_object_put(args);
		json_object_put(n);
		goto nomem;
	}
	json_object_array_add(args, json_object_new_string("ctrun-hook"));
	json_object_array_add(args, json_object_new_string("createContainer"));
	json_object_object_add(hook, "path", json_object_new_string(hook_path));
	json_object_object_add(hook, "args", args);
	/* The hook looks for the driver's tools (nvidia-smi) on the host: give
	 * it ctrun's PATH, not the container's, which runc would pass on. */
	if (getenv("PATH") != NULL && *getenv("PATH") != '\0') {
		struct json_object *env = json_object_new_array();
		char *kv;

		if (env == NULL || asprintf(&kv, "PATH=%s", getenv("PATH")) < 0) {
			json_object_put(env);
			json_object_put(hook);
			json_object_put(n);
			goto nomem;
		}
		json_object_array_add(env, json_object_new_string(kv));
		free(kv);
		json_object_object_add(hook, "env", env);
	}
	json_object_array_add(n, hook);
	json_object_object_add(hooks, "createContainer", n);
	if (set_env(proc, gpus, ids) < 0 || set_devices(config, gpus, imex) < 0)
		goto nomem;
	return 0;
nomem:
	return err_set(e, EXIT_CTRUN, "cannot edit the OCI configuration (out of memory)");
}

int oci_gpu_bundle(const char *bundle, const struct strv *gpus, const char *hook_path,
		   const char *imex, struct err *e)
{
	char path[4096], tmp[4112];
	struct json_object *config;
	const char *text;
	char *buf;
	int fd, rv = -1;

	if (xsnprintf(path, sizeof(path), "%s/config.json", bundle) < 0 ||
	    xsnprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) < 0)
		return err_set(e, EXIT_USAGE, "bundle path too long: %s", bundle);
	buf = read_file(path, NULL);
	if (buf == NULL)
		return err_sys(e, EXIT_USAGE, "%s", path);
	config = json_tokener_parse(buf);
	free(buf);
	if (config == NULL || !json_object_is_type(config, json_type_object)) {
		json_object_put(config);
		return err_set(e, EXIT_USAGE, "%s is not a JSON object", path);
	}
	if (oci_gpu_config(config, gpus, hook_path, imex, e) < 0)
		goto out;
	text = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
	fd = mkstemp(tmp);
	if (fd < 0) {
		err_sys(e, EXIT_CTRUN, "%s", tmp);
		goto out;
	}
	if (write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    fchmod(fd, 0644) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "write %s", path);
		unlink(tmp);
		goto out;
	}
	rv = 0;
out:
	json_object_put(config);
	return rv;
}

