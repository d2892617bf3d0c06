/* imgconfig.c - the image config's Env and WorkingDir into the unpacked root (see imgconfig.h). */
#include "imgconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "envfile.h"
#include "inroot.h"
#include "quote.h"
#include "rootpath.h"
#include "util.h"


static json_object *jget(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* The names ctrun's reader (ctr_image_environ) and enroot's accept. */
static bool is_name(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

/* config.KEY, an array of strings (null or absent: none), into out. */
static int strings(json_object *conf, const char *key, const char *what, struct strv *out,
		   struct err *e)
{
	json_object *a = jget(conf, key, json_type_array);

	for (size_t i = 0; a != NULL && i < json_object_array_length(a); i++) {
		json_object *s = json_object_array_get_idx(a, i);

		if (!json_object_is_type(s, json_type_string) ||
		    strlen(json_object_get_string(s)) != (size_t)json_object_get_string_len(s))
			return err_set(e, EXIT_CTRUN, "%s: config.%s[%zu] is not a string without "
				       "NUL bytes", what, key, i);
		if (strv_push(out, json_object_get_string(s)) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", what);
	}
	return 0;
}

int imgconfig_parse(json_object *cfg, const char *what, struct imgconfig *c, struct err *e)
{
	json_object *conf = jget(cfg, "config", json_type_object), *env, *wd;

	memset(c, 0, sizeof(*c));
	env = jget(conf, "Env", json_type_array);
	for (size_t i = 0; env != NULL && i < json_object_array_length(env); i++) {
		json_object *s = json_object_array_get_idx(env, i);
		const char *v, *eq;
		size_t len;

		if (!json_object_is_type(s, json_type_string)) {
			err_set(e, EXIT_CTRUN, "%s: config.Env[%zu] is not a string", what, i);
			goto fail;
		}
		v = json_object_get_string(s);
		len = (size_t)json_object_get_string_len(s);
		eq = memchr(v, '=', len);
		if (strlen(v) != len || memchr(v, '\n', len) != NULL) {
			/* One line per variable: a newline would split it in two. */
			err_set(e, EXIT_CTRUN, "%s: config.Env[%zu] (%.*s) holds a %s, which "
				"/etc/environment cannot: refused", what, i,
				(int)strcspn(v, "=\n"), v, strlen(v) != len ? "NUL byte" : "newline");
			goto fail;
		}
		if (eq == NULL || !is_name(v, (size_t)(eq - v)))
			continue;
		if (strv_push(&c->env, v) < 0) {
			err_sys(e, EXIT_CTRUN, "%s", what);
			goto fail;
		}
	}
	if (strings(conf, "Entrypoint", what, &c->entrypoint, e) < 0 ||
	    strings(conf, "Cmd", what, &c->cmd, e) < 0)
		goto fail;
	wd = jget(conf, "WorkingDir", json_type_string);
	if (wd != NULL && json_object_get_string_len(wd) > 0) {
		c->workdir = strdup(json_object_get_string(wd));
		if (c->workdir == NULL) {
			err_sys(e, EXIT_CTRUN, "%s", what);
			goto fail;
		}
	}
	return 0;
fail:
	imgconfig_free(c);
	return -1;
}

/* Would `KEY=v` come back as v from a reader that strips trailing blanks and
 * one pair of surrounding quotes (ctr_image_environ, enroot's envfmt)? */
static bool raw_is_exact(const char *v)
{
	size_t n = strlen(v);

	if (n > 0 && strchr(" \t\r\v\f", v[n - 1]) != NULL)
		return false;
	return !(n >= 2 && strchr("\"'", v[0]) != NULL && strchr("\"'", v[n - 1]) != NULL);
}

int imgconfig_environment(const struct imgconfig *c, char **text, size_t *len, struct err *e)
{
	FILE *f = open_memstream(text, len);
	bool ok = f != NULL;

	if (f == NULL)
		return err_sys(e, EXIT_CTRUN, "/etc/environment");
	for (size_t i = 0; ok && i < c->env.n; i++) {
		const char *kv = c->env.v[i], *v = strchr(kv, '=') + 1;

		if (raw_is_exact(v))
			ok = fprintf(f, "%s\n", kv) >= 0;
		else
			ok = fprintf(f, "%.*s\"%s\"\n", (int)(v - kv), kv, v) >= 0;
	}
	if (fclose(f) != 0 || !ok) {
		free(*text);
		*text = NULL;
		return err_sys(e, EXIT_CTRUN, "/etc/environment");
	}
	return 0;
}

/* Writes text into <etc>/NAME by a temporary file and rename(2): rename
 * replaces a symlink or file of that name, never follows it. */
static int write_etc(int etcfd, const char *name, const char *text, size_t len, struct err *e)
{
	char tmp[64];
	int fd, r;

	snprintf(tmp, sizeof(tmp), ".%s.ctrun-tmp", name);
	if (rootpath_remove(etcfd, tmp) < 0)
		return err_sys(e, EXIT_CTRUN, "/etc/%s", tmp);
	fd = openat(etcfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "/etc/%s", name);
	r = write_all(fd, text, len) < 0 || fchmod(fd, 0644) < 0 ? -1 : 0;
	if (close(fd) < 0 || r < 0)
		goto fail;
	if (renameat(etcfd, tmp, etcfd, name) < 0) {
		/* A directory of that name: replace it as a layer would. */
		if ((errno != EISDIR && errno != ENOTEMPTY && errno != EEXIST) ||
		    rootpath_remove(etcfd, name) < 0 || renameat(etcfd, tmp, etcfd, name) < 0)
			goto fail;
	}
	return 0;
fail:
	err_sys(e, EXIT_CTRUN, "/etc/%s", name);
	unlinkat(etcfd, tmp, 0);
	return -1;
}

int imgconfig_rc(const struct imgconfig *c, char **text, size_t *len, struct err *e)
{
	FILE *f = open_memstream(text, len);
	static const char *const sh[] = { "/bin/sh", NULL };
	char *const *cmd = c->entrypoint.n == 0 && c->cmd.n == 0 ? (char *const *)sh : c->cmd.v;

	if (f == NULL)
		return err_sys(e, EXIT_CTRUN, "/etc/rc");
	fputs("# The image's Entrypoint, Cmd and WorkingDir, written by ctrun when it unpacked\n"
	      "# the image, as enroot's import writes them; run as `sh /etc/rc [COMMAND...]`.\n"
	      "if [ -s /etc/rc.local ]; then\n"
	      "\t. /etc/rc.local\n"
	      "fi\n"
	      "if [ $# -gt 0 ]; then\n"
	      "\texec", f);
	for (size_t i = 0; i < c->entrypoint.n; i++) {
		fputc(' ', f);
		shell_quote(f, c->entrypoint.v[i]);
	}
	/* No command: the image's default runs in its WorkingDir, "/" without
	 * one, as docker and enroot's rc do; a command stays in ctrun's
	 * working directory (--workdir), so only this branch changes it. */
	fputs(" \"$@\"\nelse\n\tcd ", f);
	shell_quote(f, c->workdir != NULL ? c->workdir : "/");
	fputs(" && unset OLDPWD || exit 1\n\texec", f);
	for (size_t i = 0; i < c->entrypoint.n; i++) {
		fputc(' ', f);
		shell_quote(f, c->entrypoint.v[i]);
	}
	for (size_t i = 0; cmd != NULL && cmd[i] != NULL; i++) {
		fputc(' ', f);
		shell_quote(f, cmd[i]);
	}
	fputs("\nfi\n", f);
	if (fclose(f) != 0) {
		free(*text);
		*text = NULL;
		return err_sys(e, EXIT_CTRUN, "/etc/rc");
	}
	return 0;
}

int imgconfig_apply(const struct imgconfig *c, const char *root, struct err *e)
{
	char *text = NULL;
	size_t len = 0;
	int rootfd, etcfd = -1, wdfd, rv = -1;

	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", root);
	if (imgconfig_environment(c, &text, &len, e) < 0)
		goto out;
	etcfd = inroot_mkdirs(rootfd, "etc", 0755, INROOT_CHROOT, NULL);
	if (etcfd < 0) {
		err_sys(e, EXIT_CTRUN, "creating /etc in the image");
		goto out;
	}
	if (write_etc(etcfd, "environment", text, len, e) < 0)
		goto out;
	free(text);
	text = NULL;
	if (imgconfig_rc(c, &text, &len, e) < 0 || write_etc(etcfd, "rc", text, len, e) < 0)
		goto out;
	/* As docker and enroot do: the working directory exists in the image. */
	if (c->workdir != NULL) {
		wdfd = inroot_mkdirs(rootfd, c->workdir, 0755, INROOT_CHROOT, NULL);
		if (wdfd < 0) {
			err_sys(e, EXIT_CTRUN, "config.WorkingDir %s: cannot create it in the image",
				c->workdir);
			goto out;
		}
		close(wdfd);
	}
	rv = 0;
out:
	free(text);
	if (etcfd >= 0)
		close(etcfd);
	close(rootfd);
	return rv;
}

void imgconfig_free(struct imgconfig *c)
{
	strv_free(&c->env);
	strv_free(&c->entrypoint);
	strv_free(&c->cmd);
	free(c->workdir);
	c->workdir = NULL;
}

/* The image's /etc/environment as the container sees it: resolved inside the
 * root (an image's /etc or /etc/environment symlink may name a host path), and
 * only a plain file.  NULL with errno ENOENT when there is none. */
static char *read_image_environment(const char *rootfs)
{
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1, saved;

	if (rootfd < 0)
		return NULL;
	fd = inroot_open(rootfd, "/etc/environment", O_RDONLY | O_NONBLOCK, 0, INROOT_CHROOT, NULL);
	if (fd < 0) {
		/* A link loop or a file in the way: the container has no such file either. */
		if (errno == ELOOP || errno == ENOTDIR)
			errno = ENOENT;
		goto fail;
	}
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = ENOENT;
		goto fail;
	}
	text = read_fd_max(fd, ENVFILE_MAX + 1, &len);
	if (text != NULL && len > ENVFILE_MAX)
		errno = EFBIG; /* a hostile image's endless file */
	if (text == NULL || len > ENVFILE_MAX)
		goto fail;
	close(fd);
	close(rootfd);
	return text;
fail:
	saved = errno;
	free(text);
	if (fd >= 0)
		close(fd);
	close(rootfd);
	errno = saved;
	return NULL;
}

int image_environ_read(const char *rootfs, struct strv *env, struct err *e)
{
	char *text = read_image_environment(rootfs);
	int rc;

	if (text == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s/etc/environment", rootfs);
	rc = envfile_parse(text, env);
	free(text);
	return rc < 0 ? err_sys(e, EXIT_CTRUN, "image environment") : 0;
}
