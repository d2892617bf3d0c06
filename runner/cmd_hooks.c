/* cmd_hooks.c - `ctrun hooks ...`: the command over the drivers' install
 * phase (runner/container/rt/hooks_install.h). */
#include "hooks_install.h"
#include "oci/oci.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "container.h"
#include "gpu.h"
#include "gpu_pin.h"
#include "topology.h"
#include "util.h"

extern char **environ;

static const char usage[] =
	"usage: ctrun hooks install|uninstall enroot|oci [--system] [--dir D] [--hook PATH], "
	"or ctrun hooks configure BUNDLE [--gpus LIST] [--hook PATH]";

/* --system, --dir D, --hook PATH, --gpus LIST after the words. */
struct hooks_args {
	bool system;
	const char *dir, *hook, *gpus;
	const char *words[3];
	size_t nwords;
};

static int parse_args(const struct strv *argv, struct hooks_args *a, struct err *e)
{
	for (size_t i = 0; i < argv->n; i++) {
		const char *w = argv->v[i];
		const char **val = strcmp(w, "--dir") == 0    ? &a->dir
				 : strcmp(w, "--hook") == 0   ? &a->hook
				 : strcmp(w, "--gpus") == 0   ? &a->gpus
								: NULL;

		if (strcmp(w, "--system") == 0) {
			a->system = true;
		} else if (val != NULL) {
			if (i + 1 >= argv->n)
				return err_set(e, EXIT_USAGE, "%s needs a value (%s)", w, usage);
			*val = argv->v[++i];
		} else if (w[0] == '-' || a->nwords == 3) {
			return err_set(e, EXIT_USAGE, "unexpected '%s' (%s)", w, usage);
		} else {
			a->words[a->nwords++] = w;
		}
	}
	return 0;
}

/* `ctrun hooks configure BUNDLE`: wire ctrun-hook into a hand-made
 * bundle exactly as ctrun's OCI adapter would for this task. */
static int configure(struct options *o, const struct hooks_args *a, const char *hook,
		     struct err *e)
{
	struct strv gpus = { 0 };
	char host[256] = "localhost";
	struct topo t;
	int rv = -1;

	if (a->gpus != NULL) {
		for (const char *p = a->gpus; *p != '\0';) {
			size_t len = strcspn(p, ",");

			if (len > 0 && strv_pushn(&gpus, p, len) < 0) {
				err_sys(e, EXIT_CTRUN, "gpus");
				goto out;
			}
			p += len + (p[len] == ',');
		}
	} else {
		if (gethostname(host, sizeof(host) - 1) == 0)
			host[strcspn(host, ".")] = '\0';
		if (topo_detect(o, environ, host, gpu_count_dev_files(), &t, e) < 0)
			goto out;
		rv = gpu_pin_select(&t, environ, &gpus, e);
		topo_free(&t);
		if (rv < 0)
			goto out;
		rv = -1;
	}
	if (gpus.n == 0) {
		err_set(e, EXIT_USAGE, "no GPU to pin: this task has none (use --gpus)");
		goto out;
	}
	if (oci_gpu_bundle(a->words[1], &gpus, hook, o->imex_channels, e) < 0)
		goto out;
	if (!o->quiet)
		printf("configured %s/config.json for GPU%s %s\n", a->words[1],
		       gpus.n == 1 ? "" : "s", a->gpus != NULL ? a->gpus : "of this task");
	rv = 0;
out:
	strv_free(&gpus);
	return rv;
}

int cmd_hooks(struct options *o, struct err *e)
{
	struct hooks_args a = { 0 };
	char dir[PATH_MAX], path[PATH_MAX], hook[PATH_MAX];
	bool install;
	int ret;

	if (o->command.n > 0 && (strcmp(o->command.v[0], "-h") == 0 ||
				 strcmp(o->command.v[0], "--help") == 0)) {
		printf("%s\n", usage);
		return 0;
	}
	if (parse_args(&o->command, &a, e) < 0)
		return -1;
	if (a.nwords == 0)
		return err_set(e, EXIT_USAGE, "%s", usage);
	if (a.hook != NULL ? xsnprintf(hook, sizeof(hook), "%s", a.hook) < 0
			   : hooks_default_hook_path(hook, sizeof(hook), e) < 0)
		return e->code != 0 ? -1 : err_set(e, EXIT_USAGE, "--hook path too long");
	if (strcmp(a.words[0], "configure") == 0) {
		if (a.nwords != 2)
			return err_set(e, EXIT_USAGE, "%s", usage);
		return configure(o, &a, hook, e) < 0 ? -1 : 0;
	}
	install = strcmp(a.words[0], "install") == 0;
	if ((!install && strcmp(a.words[0], "uninstall") != 0) || a.nwords != 2 ||
	    !hooks_known(a.words[1]))
		return err_set(e, EXIT_USAGE, "%s", usage);
	if (hooks_dir(a.words[1], a.system, a.dir, environ, dir, sizeof(dir), e) < 0)
		return -1;
	ret = install ? hooks_install(a.words[1], dir, hook, path, sizeof(path), e)
		      : hooks_uninstall(a.words[1], dir, path, sizeof(path), e);
	if (ret < 0)
		return -1;
	if (!o->quiet)
		printf("%s %s\n", install ? (ret == 0 ? "installed" : "already installed:")
					  : (ret == 0 ? "removed" : "not installed:"), path);
	return 0;
}
