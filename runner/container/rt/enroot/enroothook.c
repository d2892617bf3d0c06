/* enroothook.c - ctrun-hook for enroot: the hook script (per run, or
 * installed by `ctrun hooks install enroot`: the driver's install phase,
 * hooks_install.h), and enroot's GPU phase
 * (enroot.h): where no ctrun hook is installed in enroot's hooks.d,
 * ctrun-hook is added for this run, through a per-run ENROOT_CONFIG_PATH
 * linking every entry of the user's own (rt/enroot/enroot.c writes it).
 * Both directories are enroot's (core/enrootdir.h); without HOME there is
 * no user directory. */
#include "enroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers.h"
#include "enrootdir.h"
#include "hooks_install.h"
#include "util.h"

/* Whether a ctrun hook is installed where enroot reads hooks (its system
 * directory, then the user's): an executable *.sh that runs ctrun-hook. */
static bool hook_installed(const char *const *dirs)
{
	for (; *dirs != NULL; dirs++) {
		DIR *d = opendir(*dirs);
		struct dirent *de;
		bool found = false;

		while (!found && d != NULL && (de = readdir(d)) != NULL) {
			char path[PATH_MAX], *text;
			size_t n = strlen(de->d_name), len;
			int fd;

			if (n < 4 || strcmp(de->d_name + n - 3, ".sh") != 0 ||
			    xsnprintf(path, sizeof(path), "%s/%s", *dirs, de->d_name) < 0 ||
			    access(path, X_OK) < 0 ||
			    (fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
				continue;
			text = read_fd_max(fd, 65535, &len);
			close(fd);
			found = text != NULL && strstr(text, "ctrun GPU pinning for enroot") != NULL;
			free(text);
		}
		if (d != NULL)
			closedir(d);
		if (found)
			return true;
	}
	return false;
}

/* The user's configuration directory's entries, hooks.d's one by one. */
static int config_entries(struct enroot_own *own, DIR *d, const char *userdir, struct err *e)
{
	struct dirent *de;

	while ((de = readdir(d)) != NULL) {
		int rc = 0;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, "hooks.d") == 0) {
			DIR *h = opendir(userdir);
			struct dirent *he;

			while (rc == 0 && h != NULL && (he = readdir(h)) != NULL)
				if (strcmp(he->d_name, ".") != 0 && strcmp(he->d_name, "..") != 0)
					rc = strv_pushf(&own->config_entries, "hooks.d/%s", he->d_name);
			if (h != NULL)
				closedir(h);
		} else {
			rc = strv_push(&own->config_entries, de->d_name);
		}
		if (rc < 0)
			return err_sys(e, EXIT_CTRUN, "enroot configuration");
	}
	return 0;
}

/* Whether enroot's 98-nvidia.sh would find nvidia-container-cli: it looks
 * in enroot's PATH (ctrun's), then /usr/sbin and /sbin (and the image's
 * /usr/bin, which a GPU run does not count on). */
static bool nvcli_found(char *const *envp)
{
	const char *path = NULL;
	char *copy, *save = NULL;
	bool found = false;

	for (char *const *v = envp; v != NULL && *v != NULL && path == NULL; v++)
		if (strncmp(*v, "PATH=", 5) == 0)
			path = *v + 5;
	if (asprintf(&copy, "%s:/usr/sbin:/sbin", path != NULL ? path : "/usr/bin:/bin") < 0)
		return true; /* unknown: as before, enroot's own hook */
	for (char *d = strtok_r(copy, ":", &save); d != NULL && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char f[PATH_MAX];

		found = d[0] == '/' && xsnprintf(f, sizeof(f), "%s/nvidia-container-cli", d) >= 0 &&
			access(f, X_OK) == 0;
	}
	free(copy);
	return found;
}

int enroot_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	struct enroot_own *own = s->own;
	char sysconf[PATH_MAX], sysdir[PATH_MAX], userdir[PATH_MAX];
	DIR *d;
	int rv;

	if (enroot_sysconf_path(a->envp, sysconf, sizeof(sysconf)) < 0 ||
	    xsnprintf(sysdir, sizeof(sysdir), "%s/hooks.d", sysconf) < 0)
		return 0;
	if (enroot_config_path(a->envp, own->config_dir, sizeof(own->config_dir)) < 0 &&
	    errno != ENOENT)
		return 0;
	if (xsnprintf(userdir, sizeof(userdir), "%s/hooks.d", own->config_dir) < 0)
		return 0;
	if (hook_installed((const char *const[]){ sysdir, own->config_dir[0] ? userdir : NULL,
						  NULL }))
		return 0; /* it runs anyway: once is enough */
	if (sibling_path("ctrun-hook", own->hook, sizeof(own->hook)) < 0) {
		own->hook[0] = '\0';
		return 0; /* nothing to add; the step's device cgroup still holds */
	}
	own->no_nvcli = !nvcli_found(a->envp);
	if (own->config_dir[0] == '\0' || (d = opendir(own->config_dir)) == NULL)
		return 0;
	own->config = own->config_dir;
	rv = config_entries(own, d, userdir, e);
	closedir(d);
	return rv;
}

/* An argument of the hook's command line in the script: no quoting needed. */
static bool plain_word(const char *w)
{
	return w == NULL || (w[0] != '\0' && w[0] != '-' &&
			     strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,-") ==
				     strlen(w));
}

char *enroot_hook_script(const char *hook_path, const char *why, const char *gpus,
			 const char *imex)
{
	static const char fmt[] =
		"#!/bin/sh\n"
		"# ctrun GPU pinning for enroot containers; %s. See ctrun's docs/hooks.md.\n"
		"hook=%s\n"
		"if [ ! -x \"$hook\" ]; then\n"
		"\techo \"ctrun: $hook is missing: GPUs not pinned (ctrun hooks uninstall enroot)\" >&2\n"
		"\texit 0\n"
		"fi\n"
		"exec \"$hook\" enroot%s%s%s%s\n";
	char *text;

	if (hook_path[0] != '/' || strstr(hook_path, "/../") != NULL ||
	    strspn(hook_path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+@-") !=
		    strlen(hook_path))
		return NULL;
	if (!plain_word(gpus) || !plain_word(imex))
		return NULL;
	return asprintf(&text, fmt, why, hook_path, gpus != NULL ? " --gpus " : "",
			gpus != NULL ? gpus : "", imex != NULL ? " --imex " : "",
			imex != NULL ? imex : "") < 0
		       ? NULL
		       : text;
}

/* The installed one: it gives way quietly when ctrun-hook is gone, so
 * removing ctrun never stops every enroot container of the user. */
static char *hook_file(const char *hook_path)
{
	return enroot_hook_script(hook_path, "written by `ctrun hooks install enroot`,\n"
				  "# removed by `ctrun hooks uninstall enroot`", NULL, NULL);
}

/* Whether text is an installed one (for any hook path). */
static bool hook_file_is_ours(const char *text)
{
	const char *l = strstr(text, "\nhook=");
	char *path = l != NULL ? strndup(l + 6, strcspn(l + 6, "\n")) : NULL;
	char *want = path != NULL ? hook_file(path) : NULL;
	bool ours = want != NULL && strcmp(want, text) == 0;

	free(path);
	free(want);
	return ours;
}

/* enroot's hooks.d in enroot's own directories (core/enrootdir.h). */
static int hooks_dir_of(bool system, char *const *envp, char *buf, size_t size, struct err *e)
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

const struct ctr_hookfile enroot_hookfile = {
	.file = ENROOT_HOOK_FILE,
	.mode = 0755,
	.text = hook_file,
	.is_ours = hook_file_is_ours,
	.dir = hooks_dir_of,
};
