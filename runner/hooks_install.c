/* hooks_install.c - ctrun-hook's files in the runtimes' hooks.d
 * directories (see hooks_install.h; enroot's script is its driver's,
 * rt/enroot/enroothook.c); `ctrun hooks` is cmd_hooks.c. */
#include "hooks_install.h"

#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "enroot/enroot.h"
#include "enrootdir.h"
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

/* Only characters that need no quoting in sh or JSON go into the files. */
static bool plain_path(const char *p)
{
	return p[0] == '/' && strstr(p, "/../") == NULL &&
	       strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+@-") ==
		       strlen(p);
}

char *hooks_file_text(const char *what, const char *hook_path)
{
	char *text;

	if (!plain_path(hook_path))
		return NULL;
	if (strcmp(what, "enroot") == 0)
		return enroot_hook_file(hook_path);
	if (asprintf(&text, oci_fmt, hook_path) < 0)
		return NULL;
	return text;
}

/* The hook path an OCI hooks.d file names, to regenerate it and compare. */
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

bool hooks_file_is_ours(const char *what, const char *text)
{
	char *path, *want;
	bool ours;

	if (strcmp(what, "enroot") == 0)
		return enroot_hook_file_is_ours(text);
	path = path_in(text);
	want = path != NULL ? hooks_file_text(what, path) : NULL;
	ours = want != NULL && strcmp(want, text) == 0;

	free(path);
	free(want);
	return ours;
}

/* enroot's hooks.d in enroot's own directories (core/enrootdir.h). */
static int enroot_hooks_dir(bool system, char *const *envp, char *buf, size_t size,
			    struct err *e)
{
	char base[PATH_MAX];
	int ret = system ? enroot_sysconf_path(envp, base, sizeof(base))
			 : enroot_config_path(envp, base, sizeof(base));

	if (ret < 0 && errno == ENOENT)
		return err_set(e, EXIT_USAGE, "no HOME or ENROOT_CONFIG_PATH: use --dir or --system");
	if (ret < 0 || xsnprintf(buf, size, "%s/hooks.d", base) < 0)
		return err_set(e, EXIT_USAGE, "hooks directory path too long");
	return 0;
}

int hooks_dir(const char *what, bool system, const char *dir, char *const *envp, char *buf,
	      size_t size, struct err *e)
{
	if (dir == NULL && strcmp(what, "oci") != 0)
		return enroot_hooks_dir(system, envp, buf, size, e);
	if (xsnprintf(buf, size, "%s", dir != NULL ? dir : HOOKS_OCI_SYSTEM_DIR) < 0)
		return err_set(e, EXIT_USAGE, "hooks directory path too long");
	return 0;
}

static int file_path(const char *what, const char *dir, char *path, size_t size, struct err *e)
{
	if (xsnprintf(path, size, "%s/%s", dir,
		      strcmp(what, "enroot") == 0 ? HOOKS_ENROOT_FILE : HOOKS_OCI_FILE) < 0)
		return err_set(e, EXIT_USAGE, "%s: path too long", dir);
	return 0;
}

/* The file's text, NULL with errno ENOENT when absent.  Only regular
 * files count: a link or directory in its place is "foreign". */
static char *read_existing(const char *path, bool *foreign)
{
	struct stat st;

	*foreign = false;
	if (lstat(path, &st) < 0)
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size > 65536) {
		*foreign = true;
		return NULL;
	}
	return read_file(path, NULL);
}

int hooks_install(const char *what, const char *dir, const char *hook_path, char *path,
		  size_t size, struct err *e)
{
	char *text = hooks_file_text(what, hook_path), *old = NULL, tmp[PATH_MAX];
	bool enroot = strcmp(what, "enroot") == 0, foreign;
	int fd = -1, rv = -1;

	if (text == NULL)
		return err_set(e, EXIT_USAGE, "hook path '%s' must be absolute and plain (letters, "
			       "digits, / . _ + @ -)", hook_path);
	if (access(hook_path, X_OK) < 0) {
		err_sys(e, EXIT_USAGE, "%s", hook_path);
		goto out;
	}
	if (file_path(what, dir, path, size, e) < 0)
		goto out;
	old = read_existing(path, &foreign);
	if (old != NULL && strcmp(old, text) == 0) {
		rv = 1;
		goto out;
	}
	if (foreign || (old != NULL && !hooks_file_is_ours(what, old))) {
		err_set(e, EXIT_USAGE, "%s exists and was not written by ctrun: not overwriting it",
			path);
		goto out;
	}
	if (old == NULL && errno != ENOENT) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		goto out;
	}
	/* An older ctrun's file (another hook path) is replaced; a reader
	 * never sees half a file: write aside, then rename. */
	if (mkdir_p(dir, 0755) < 0) {
		err_sys(e, EXIT_CTRUN, "create %s", dir);
		goto out;
	}
	if (xsnprintf(tmp, sizeof(tmp), "%s/.ctrun-hook.XXXXXX", dir) < 0 ||
	    (fd = mkstemp(tmp)) < 0) {
		err_sys(e, EXIT_CTRUN, "write into %s", dir);
		goto out;
	}
	if (write_all(fd, text, strlen(text)) < 0 || fchmod(fd, enroot ? 0755 : 0644) < 0 ||
	    close(fd) < 0 || rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "write %s", path);
		unlink(tmp);
		fd = -1;
		goto out;
	}
	rv = 0;
out:
	free(text);
	free(old);
	return rv;
}

int hooks_uninstall(const char *what, const char *dir, char *path, size_t size, struct err *e)
{
	bool foreign;
	char *old;

	if (file_path(what, dir, path, size, e) < 0)
		return -1;
	old = read_existing(path, &foreign);
	if (old == NULL && !foreign) {
		if (errno == ENOENT)
			return 1;
		return err_sys(e, EXIT_CTRUN, "%s", path);
	}
	if (foreign || !hooks_file_is_ours(what, old)) {
		free(old);
		return err_set(e, EXIT_USAGE, "%s was not written by ctrun (or was changed since): "
			       "not removing it", path);
	}
	free(old);
	if (unlink(path) < 0)
		return err_sys(e, EXIT_CTRUN, "remove %s", path);
	return 0;
}

int hooks_default_hook_path(char *buf, size_t size, struct err *e)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "/proc/self/exe");
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash == NULL)
		return err_set(e, EXIT_CTRUN, "cannot tell where ctrun is installed");
	*slash = '\0';
	if (xsnprintf(buf, size, "%s/ctrun-hook", self) < 0)
		return err_set(e, EXIT_CTRUN, "path too long");
	return 0;
}
