/* hooks_install.c - ctrun-hook's files in the runtimes' hooks.d
 * directories (see hooks_install.h): the install phase of the drivers that
 * have a hook file (drivers.h hookfile: enroot's script,
 * enroot/enroothook.c; the OCI hooks.d JSON, oci/ocihook.c); `ctrun
 * hooks` is runner/cmd_hooks.c. */
#include "hooks_install.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers.h"
#include "util.h"

/* The driver's hook file (drivers.h), NULL when it has none. */
static const struct ctr_hookfile *hookfile(const char *what)
{
	const struct ctr_driver *d = ctr_driver_named(what);

	return d != NULL ? d->hookfile : NULL;
}

bool hooks_known(const char *what)
{
	return hookfile(what) != NULL;
}

bool hooks_plain_path(const char *p)
{
	return p[0] == '/' && strstr(p, "/../") == NULL &&
	       strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+@-") ==
		       strlen(p);
}

char *hooks_file_text(const char *what, const char *hook_path)
{
	const struct ctr_hookfile *h = hookfile(what);

	if (h == NULL || !hooks_plain_path(hook_path))
		return NULL;
	return h->text(hook_path);
}

bool hooks_file_is_ours(const char *what, const char *text)
{
	const struct ctr_hookfile *h = hookfile(what);

	return h != NULL && h->is_ours(text);
}

int hooks_dir(const char *what, bool system, const char *dir, char *const *envp, char *buf,
	      size_t size, struct err *e)
{
	const struct ctr_hookfile *h = hookfile(what);

	if (h == NULL)
		return err_set(e, EXIT_USAGE, "%s: no hook file to install for it", what);
	if (dir == NULL)
		return h->dir(system, envp, buf, size, e);
	if (xsnprintf(buf, size, "%s", dir) < 0)
		return err_set(e, EXIT_USAGE, "hooks directory path too long");
	return 0;
}

static int file_path(const char *what, const char *dir, char *path, size_t size, struct err *e)
{
	const struct ctr_hookfile *h = hookfile(what);

	if (h == NULL)
		return err_set(e, EXIT_USAGE, "%s: no hook file to install for it", what);
	if (xsnprintf(path, size, "%s/%s", dir, h->file) < 0)
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
	const struct ctr_hookfile *h = hookfile(what);
	bool foreign;
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
	if (write_all(fd, text, strlen(text)) < 0 || fchmod(fd, (mode_t)h->mode) < 0 ||
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
