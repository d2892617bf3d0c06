/* ocihook.c - the OCI drivers' install phase (drivers.h hookfile,
 * hooks_install.h): the containers/common hooks.d JSON that makes podman
 * and CRI-O run ctrun-hook for containers carrying ctrun's annotation. */
#include "oci.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers.h"
#include "hooks_install.h"
#include "util.h"

/* containers/common hooks.d schema 1.0.0: run at createContainer for
 * containers carrying ctrun's annotation. */
static const char oci_fmt[] =
	"{\n"
	"  \"version\": \"1.0.0\",\n"
	"  \"hook\": {\n"
	"    \"path\": \"%s\",\n"
	"    \"args\": [\"ctrun-hook\", \"createContainer\"]\n"
	"  },\n"
	"  \"when\": {\n"
	"    \"annotations\": {\n"
	"      \"^org\\\\.ctrun\\\\.enabled$\": \"^true$\"\n"
	"    }\n"
	"  },\n"
	"  \"stages\": [\"createContainer\"]\n"
	"}\n";

static char *hook_file(const char *hook_path)
{
	char *text;

	if (asprintf(&text, oci_fmt, hook_path) < 0)
		return NULL;
	return text;
}

/* The hook path a hooks.d file names, to regenerate it and compare. */
static char *path_in(const char *text)
{
	struct json_object *o = json_tokener_parse(text), *hook, *path;
	char *p = NULL;

	if (o != NULL && json_object_object_get_ex(o, "hook", &hook) &&
	    json_object_object_get_ex(hook, "path", &path) &&
	    json_object_is_type(path, json_type_string))
		p = strdup(json_object_get_string(path));
	json_object_put(o);
	return p;
}

static bool hook_file_is_ours(const char *text)
{
	char *path = path_in(text), *want;
	bool ours;

	want = path != NULL && hooks_plain_path(path) ? hook_file(path) : NULL;
	ours = want != NULL && strcmp(want, text) == 0;
	free(path);
	free(want);
	return ours;
}

/* Without --dir: the system's directory (--system changes nothing). */
static int hooks_dir_of(bool system, char *const *envp, char *buf, size_t size, struct err *e)
{
	(void)system;
	(void)envp;
	if (xsnprintf(buf, size, "%s", OCI_HOOKS_SYSTEM_DIR) < 0)
		return err_set(e, EXIT_USAGE, "hooks directory path too long");
	return 0;
}

const struct ctr_hookfile oci_hookfile = {
	.file = OCI_HOOK_FILE,
	.mode = 0644,
	.text = hook_file,
	.is_ours = hook_file_is_ours,
	.dir = hooks_dir_of,
};
