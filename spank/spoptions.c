/* spoptions.c - the plugin's options, pyxis's syntax and errors (spoptions.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "runtimes.h"
#include "spconf.h"
#include "spmounts.h"
#include "spoptions.h"

#define ARG_MAX_LEN (PATH_MAX - 1)

const struct sp_optdesc sp_optdescs[] = {
	{ "container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH",
	  "[ctrun] the image to use for the container filesystem: an enroot URI or docker:// "
	  "reference (pulled into ctrun's image store), or a path on the nodes to a squashfs, SIF, "
	  "OCI or docker archive or a directory", SP_IMAGE, 0 },
	{ "container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]",
	  "[ctrun] bind mount[s] inside the container. Mount flags are separated with \"+\", "
	  "e.g. \"ro+rprivate\"", SP_MOUNTS, 0 },
	{ "container-workdir", "PATH", "[ctrun] working directory inside the container",
	  SP_WORKDIR, 0 },
	{ "container-name", "NAME[:FLAG]",
	  "[ctrun] name to use for saving and loading the container on the node (FLAG: auto, "
	  "create, exec, no_exec). Unnamed containers are removed after the step; named ones are "
	  "not", SP_NAME, 0 },
	{ "container-save", "PATH",
	  "[ctrun] save the container state to a squashfs file on the node's file system",
	  SP_SAVE, 0 },
	{ "container-mount-home", NULL, "[ctrun] bind mount the user's home directory (default)",
	  SP_MOUNT_HOME, 1 },
	{ "no-container-mount-home", NULL, "[ctrun] do not bind mount the user's home directory",
	  SP_MOUNT_HOME, 0 },
	{ "container-remap-root", NULL,
	  "[ctrun] ask to be remapped to root inside the container. Does not grant elevated "
	  "system permissions, despite appearances.", SP_REMAP_ROOT, 1 },
	{ "no-container-remap-root", NULL, "[ctrun] do not remap to root inside the container",
	  SP_REMAP_ROOT, 0 },
	{ "container-entrypoint", NULL, "[ctrun] execute the entrypoint from the container image",
	  SP_ENTRYPOINT, 1 },
	{ "no-container-entrypoint", NULL,
	  "[ctrun] do not execute the entrypoint from the container image", SP_ENTRYPOINT, 0 },
	{ "container-entrypoint-log", NULL, "[ctrun] print the output of the entrypoint script",
	  SP_ENTRYPOINT_LOG, 1 },
	{ "container-writable", NULL, "[ctrun] make the container filesystem writable",
	  SP_WRITABLE, 1 },
	{ "container-readonly", NULL, "[ctrun] make the container filesystem read-only (default)",
	  SP_WRITABLE, 0 },
	{ "container-env", "NAME[,NAME...]",
	  "[ctrun] names of environment variables whose host value overrides the image's (and "
	  "reaches the entrypoint)", SP_ENV, 0 },
	{ "container-unshare", "NS[,NS...]",
	  "[ctrun] not supported: ctrun's containers keep the host's network, IPC and UTS "
	  "namespaces", SP_UNSHARE, 0 },
	/* The names from the one list (core/runtimes.h), as ctrun's --help. */
#define SP_RUNTIME_NAME(n) ", " #n
	{ "container-runtime", "NAME",
	  "[ctrun] the container runtime (ctrun --runtime): auto" CTR_DRIVERS(SP_RUNTIME_NAME),
	  SP_RUNTIME, 0 },
#undef SP_RUNTIME_NAME
	{ "container-device", "VENDOR/CLASS=NAME[,...]",
	  "[ctrun] CDI devices for the container (ctrun --device), e.g. nvidia.com/gpu=0",
	  SP_DEVICE, 0 },
};
const unsigned sp_noptdescs = sizeof(sp_optdescs) / sizeof(*sp_optdescs);

void sp_args_init(struct sp_args *a)
{
	memset(a, 0, sizeof(*a));
	a->mount_home = a->remap_root = a->entrypoint = a->entrypoint_log = a->writable = -1;
}

void sp_args_free(struct sp_args *a)
{
	free(a->image);
	strv_free(&a->mounts);
	strv_free(&a->sources);
	free(a->workdir);
	free(a->name);
	free(a->name_flags);
	free(a->save);
	free(a->unshare);
	strv_free(&a->env);
	strv_free(&a->devices);
	free(a->runtime);
	sp_args_init(a);
}

/* A value given once (Slurm may pass it again: the same value is fine). */
static int set_once(char **slot, const char *opt, const char *arg, struct err *e)
{
	if (arg == NULL || *arg == '\0')
		return err_set(e, EXIT_USAGE, "--%s: argument required", opt);
	if (strlen(arg) > ARG_MAX_LEN)
		return err_set(e, EXIT_USAGE, "--%s: the argument is longer than %d bytes", opt,
			       ARG_MAX_LEN);
	if (*slot != NULL)
		return strcmp(*slot, arg) == 0 ? 0 : err_set(e, EXIT_USAGE, "--%s specified multiple "
							     "times", opt);
	*slot = strdup(arg);
	return *slot != NULL ? 0 : err_sys(e, EXIT_CTRUN, "--%s", opt);
}

static int set_flag(int *slot, int val, const char *yes, const char *no, struct err *e)
{
	if (*slot != -1 && *slot != val)
		return err_set(e, EXIT_USAGE, "both --%s and --%s were specified", yes, no);
	*slot = val;
	return 0;
}

/* Drops the entries of s from n on (a list refused as a whole). */
static void strv_cut(struct strv *s, size_t n)
{
	while (s->n > n)
		free(s->v[--s->n]);
	if (s->v != NULL)
		s->v[s->n] = NULL;
}

/* A comma-separated list, each item to fn; one bad item refuses it all. */
static int each_item(struct sp_args *a, const char *opt, const char *arg,
		     int (*fn)(struct sp_args *, const char *, const char *, struct err *),
		     struct err *e)
{
	size_t nmounts = a->mounts.n, nsources = a->sources.n, nenv = a->env.n;
	char *dup, *rest, *item;
	int rv = 0;

	if (arg == NULL || *arg == '\0')
		return err_set(e, EXIT_USAGE, "--%s: argument required", opt);
	if (strlen(arg) > 16 * ARG_MAX_LEN)
		return err_set(e, EXIT_USAGE, "--%s: the argument is too long", opt);
	rest = dup = strdup(arg);
	if (dup == NULL)
		return err_sys(e, EXIT_CTRUN, "--%s", opt);
	while (rv == 0 && (item = strsep(&rest, ",")) != NULL)
		rv = fn(a, item, arg, e);
	free(dup);
	if (rv < 0) {
		strv_cut(&a->mounts, nmounts);
		strv_cut(&a->sources, nsources);
		strv_cut(&a->env, nenv);
	}
	return rv;
}

static int mount_item(struct sp_args *a, const char *item, const char *all, struct err *e)
{
	(void)all;
	return sp_mounts_parse(item, &a->mounts, &a->sources, e);
}

static int env_item(struct sp_args *a, const char *item, const char *all, struct err *e)
{
	if (*item == '\0' || strchr(item, '=') != NULL)
		return err_set(e, EXIT_USAGE, "--container-env: invalid format: %s", all);
	if (strv_find(&a->env, item) >= 0)
		return 0;
	return strv_push(&a->env, item) < 0 ? err_sys(e, EXIT_CTRUN, "--container-env") : 0;
}

/* A CDI name (ctrun checks it, and the spec has it, before the container
 * starts); nothing ctrun would not take as one word. */
static int device_item(struct sp_args *a, const char *item, const char *all, struct err *e)
{
	if (*item == '\0' || strchr(item, '=') == NULL || item[0] == '-')
		return err_set(e, EXIT_USAGE, "--container-device: '%s' is not a CDI device name "
			       "(vendor.com/class=name)", all);
	if (strv_find(&a->devices, item) >= 0)
		return 0;
	return strv_push(&a->devices, item) < 0 ? err_sys(e, EXIT_CTRUN, "--container-device")
						 : 0;
}

static int unshare_item(struct sp_args *a, const char *item, const char *all, struct err *e)
{
	(void)a;
	(void)all;
	if (*item == '\0')
		return err_set(e, EXIT_USAGE, "--container-unshare: empty namespace argument");
	if (strcmp(item, "net") != 0 && strcmp(item, "ipc") != 0 && strcmp(item, "uts") != 0)
		return err_set(e, EXIT_USAGE, "--container-unshare: unknown namespace '%s'", item);
	return 0;
}

/* ctrun's rule for a kept container's name (images/cache/named.c checks it again
 * where the container is made): letters, digits, '.', '_', '-'. */
static int check_name(const char *name, struct err *e)
{
	size_t n = strlen(name);

	if (n == 0)
		return err_set(e, EXIT_USAGE, "--container-name: empty name");
	if (n > 64 || name[0] == '.' || name[0] == '-' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
		return err_set(e, EXIT_USAGE, "--container-name: '%.80s%s' is not a name: 1 to 64 "
			       "letters, digits, '.', '_' or '-', not starting with '.' or '-'",
			       name, n > 80 ? "..." : "");
	return 0;
}

static int set_name(struct sp_args *a, const char *arg, struct err *e)
{
	const char *colon;
	char *name = NULL;
	const char *flags;
	int rv = -1;

	if (arg == NULL || *arg == '\0')
		return err_set(e, EXIT_USAGE, "--container-name: argument required");
	colon = strchr(arg, ':');
	flags = colon != NULL && colon[1] != '\0' ? colon + 1 : "auto";
	name = colon != NULL ? strndup(arg, (size_t)(colon - arg)) : strdup(arg);
	if (name == NULL)
		return err_sys(e, EXIT_CTRUN, "--container-name");
	if (check_name(name, e) < 0)
		goto out;
	if (strcmp(flags, "auto") != 0 && strcmp(flags, "create") != 0 &&
	    strcmp(flags, "exec") != 0 && strcmp(flags, "no_exec") != 0) {
		err_set(e, EXIT_USAGE, "--container-name: flag must be \"auto\", \"create\", "
			"\"exec\" or \"no_exec\"");
		goto out;
	}
	if (a->name != NULL) {
		rv = strcmp(a->name, name) == 0 && strcmp(a->name_flags, flags) == 0
			     ? 0 : err_set(e, EXIT_USAGE, "--container-name specified multiple times");
		goto out;
	}
	a->name_flags = strdup(flags);
	if (a->name_flags == NULL) {
		err_sys(e, EXIT_CTRUN, "--container-name");
		goto out;
	}
	a->name = name;
	name = NULL;
	rv = 0;
out:
	free(name);
	return rv;
}

int sp_args_set(struct sp_args *a, enum sp_opt opt, int val, const char *arg, struct err *e)
{
	switch (opt) {
	case SP_IMAGE:
		return set_once(&a->image, "container-image", arg, e);
	case SP_MOUNTS:
		return each_item(a, "container-mounts", arg, mount_item, e);
	case SP_WORKDIR:
		return set_once(&a->workdir, "container-workdir", arg, e);
	case SP_NAME:
		return set_name(a, arg, e);
	case SP_SAVE:
		if (arg != NULL && *arg != '\0' && arg[strlen(arg) - 1] == '/')
			return err_set(e, EXIT_USAGE, "--container-save: target is a directory");
		return set_once(&a->save, "container-save", arg, e);
	case SP_MOUNT_HOME:
		return set_flag(&a->mount_home, val, "container-mount-home",
				"no-container-mount-home", e);
	case SP_REMAP_ROOT:
		return set_flag(&a->remap_root, val, "container-remap-root",
				"no-container-remap-root", e);
	case SP_ENTRYPOINT:
		return set_flag(&a->entrypoint, val, "container-entrypoint",
				"no-container-entrypoint", e);
	case SP_ENTRYPOINT_LOG:
		a->entrypoint_log = val;
		return 0;
	case SP_WRITABLE:
		return set_flag(&a->writable, val, "container-writable", "container-readonly", e);
	case SP_ENV:
		return each_item(a, "container-env", arg, env_item, e);
	case SP_UNSHARE:
		if (each_item(a, "container-unshare", arg, unshare_item, e) < 0)
			return -1;
		return a->unshare != NULL ? 0 : set_once(&a->unshare, "container-unshare", arg, e);
	case SP_RUNTIME:
		return set_once(&a->runtime, "container-runtime", arg, e);
	case SP_DEVICE:
		return each_item(a, "container-device", arg, device_item, e);
	case SP_NOPTS:
		break;
	}
	return err_set(e, EXIT_CTRUN, "unknown option %d", (int)opt);
}

/* pyxis's booleans. */
static int parse_bool(const char *s)
{
	if (strcmp(s, "1") == 0 || strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 ||
	    strcmp(s, "y") == 0)
		return 1;
	if (strcmp(s, "0") == 0 || strcmp(s, "false") == 0 || strcmp(s, "no") == 0 ||
	    strcmp(s, "n") == 0)
		return 0;
	return -1;
}

int sp_args_env(struct sp_args *a, const char *(*get)(const char *name, void *arg),
		void *arg, struct err *e)
{
	static const struct {
		const char *name;
		enum sp_opt opt;
		int invert; /* READONLY=1 is writable 0; -1: a value, not a boolean */
	} vars[] = {
		{ "PYXIS_CONTAINER_IMAGE", SP_IMAGE, -1 },
		{ "PYXIS_CONTAINER_MOUNTS", SP_MOUNTS, -1 },
		{ "PYXIS_CONTAINER_WORKDIR", SP_WORKDIR, -1 },
		{ "PYXIS_CONTAINER_NAME", SP_NAME, -1 },
		{ "PYXIS_CONTAINER_SAVE", SP_SAVE, -1 },
		{ "PYXIS_CONTAINER_MOUNT_HOME", SP_MOUNT_HOME, 0 },
		{ "PYXIS_CONTAINER_REMAP_ROOT", SP_REMAP_ROOT, 0 },
		{ "PYXIS_CONTAINER_ENTRYPOINT", SP_ENTRYPOINT, 0 },
		{ "PYXIS_CONTAINER_ENTRYPOINT_LOG", SP_ENTRYPOINT_LOG, 0 },
		{ "PYXIS_CONTAINER_WRITABLE", SP_WRITABLE, 0 },
		{ "PYXIS_CONTAINER_READONLY", SP_WRITABLE, 1 },
		{ "PYXIS_CONTAINER_ENV", SP_ENV, -1 },
		{ "PYXIS_CONTAINER_UNSHARE", SP_UNSHARE, -1 },
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
		const char *v = get(vars[i].name, arg);
		int b;

		if (v == NULL)
			continue;
		switch (vars[i].opt) {
		case SP_IMAGE: if (a->image != NULL) continue; break;
		case SP_MOUNTS: if (a->mounts.n > 0) continue; break;
		case SP_WORKDIR: if (a->workdir != NULL) continue; break;
		case SP_NAME: if (a->name != NULL) continue; break;
		case SP_SAVE: if (a->save != NULL) continue; break;
		case SP_MOUNT_HOME: if (a->mount_home != -1) continue; break;
		case SP_REMAP_ROOT: if (a->remap_root != -1) continue; break;
		case SP_ENTRYPOINT: if (a->entrypoint != -1) continue; break;
		case SP_ENTRYPOINT_LOG: if (a->entrypoint_log != -1) continue; break;
		case SP_WRITABLE: if (a->writable != -1) continue; break;
		case SP_ENV: if (a->env.n > 0) continue; break;
		case SP_UNSHARE: if (a->unshare != NULL) continue; break;
		default: continue;
		}
		/* As pyxis: a boolean it cannot read is no setting. */
		b = vars[i].invert >= 0 ? parse_bool(v) : 0;
		if (b < 0)
			continue;
		if (sp_args_set(a, vars[i].opt, vars[i].invert == 1 ? !b : b,
				vars[i].invert >= 0 ? NULL : v, e) < 0)
			return err_wrap(e, "%s", vars[i].name);
	}
	return 0;
}

bool sp_args_enabled(const struct sp_args *a, struct strv *notes)
{
	static const char why[] = "because neither --container-image nor --container-name is set";

	if (a->image != NULL || a->name != NULL)
		return true;
	if (a->mounts.n > 0)
		strv_pushf(notes, "ignoring --container-mounts %s", why);
	if (a->workdir != NULL)
		strv_pushf(notes, "ignoring --container-workdir %s", why);
	if (a->save != NULL)
		strv_pushf(notes, "ignoring --container-save %s", why);
	if (a->mount_home != -1)
		strv_pushf(notes, "ignoring --[no-]container-mount-home %s", why);
	if (a->remap_root != -1)
		strv_pushf(notes, "ignoring --[no-]container-remap-root %s", why);
	if (a->entrypoint != -1)
		strv_pushf(notes, "ignoring --[no-]container-entrypoint %s", why);
	if (a->entrypoint_log != -1)
		strv_pushf(notes, "ignoring --container-entrypoint-log %s", why);
	if (a->writable != -1)
		strv_pushf(notes, "ignoring --container-%s %s", a->writable ? "writable" : "readonly",
			   why);
	return false;
}

/* A reference (not a path: pyxis's rule, a path starts with '.' or '/'). */
static bool is_reference(const char *image)
{
	return strspn(image, "./") == 0;
}

int sp_args_check(const struct sp_args *a, struct err *e)
{
	if (a->image != NULL && is_reference(a->image)) {
		struct image_ref r;
		char ref[PATH_MAX + 16];

		if (strncmp(a->image, "dockerd://", 10) == 0 || strncmp(a->image, "podman://", 9) == 0)
			return err_set(e, EXIT_USAGE, "--container-image %s: ctrun does not import from "
				       "a local daemon: push the image to a registry, or save it "
				       "(docker save) and give the archive's path", a->image);
		snprintf(ref, sizeof(ref), "%s%s", strncmp(a->image, "docker://", 9) == 0 ? "" :
			 "docker://", a->image);
		if (ref_parse(ref, &r, e) < 0)
			return err_wrap(e, "--container-image");
	}
	return 0;
}


int sp_args_hold_argv(const struct sp_args *a, const struct sp_conf *c, const char *script,
		      const char *pmix, struct strv *argv, struct err *e)
{
	const char *runtime = a->runtime != NULL ? a->runtime : c->runtime[0] ? c->runtime : NULL;
	int rc = 0;

	/* --container-name alone: ctrun __hold finds the kept container's image. */
	if (a->image == NULL && a->name == NULL)
		return err_set(e, EXIT_USAGE, "neither --container-image nor --container-name");
	if (a->image != NULL) {
		rc |= strv_push(argv, "--image");
		rc |= is_reference(a->image) && strncmp(a->image, "docker://", 9) != 0
			      ? strv_pushf(argv, "docker://%s", a->image) : strv_push(argv, a->image);
	}
	for (size_t i = 0; i < a->mounts.n; i++)
		rc |= strv_push(argv, "--mount") | strv_push(argv, a->mounts.v[i]);
	if (script != NULL)
		rc |= sp_mounts_bind(argv, script, true);
	/* PMIx's server directory (its socket, shared memory): the tasks'
	 * PMIX_SERVER_TMPDIR, under slurmd's spool, as pyxis's enroot hook
	 * binds it. */
	if (pmix != NULL)
		rc |= sp_mounts_bind(argv, pmix, false);
	/* The task enters --container-workdir itself, as pyxis's task does
	 * (relative to the container's root; a missing one is an error);
	 * without it, pyxis's rule (default_workdir=image): the hold enters
	 * the image's working directory (spcontainer.c), and srun's is not bound. */
	if (a->workdir != NULL || c->workdir_image)
		rc |= strv_push(argv, "--workdir") | strv_push(argv, "/");
	/* What the user chose, either way, over ctrun.ini's defaults (a
	 * site's `writable = true` is enroot.conf's ENROOT_ROOTFS_WRITABLE:
	 * --container-readonly wins over it, as over enroot's); what they did
	 * not choose is the site's.  The entrypoint's default is plugstack's
	 * execute_entrypoint (pyxis's), never ctrun.ini's. */
	if (a->mount_home != -1)
		rc |= strv_push(argv, a->mount_home ? "--no-home=false" : "--no-home");
	if (a->remap_root != -1)
		rc |= strv_push(argv, a->remap_root ? "--root" : "--root=false");
	rc |= strv_push(argv, a->entrypoint == 1 || (a->entrypoint == -1 && c->execute_entrypoint)
				      ? "--entrypoint" : "--entrypoint=false");
	if (a->writable != -1)
		rc |= strv_push(argv, a->writable ? "--writable" : "--writable=false");
	for (size_t i = 0; i < a->env.n; i++)
		rc |= strv_push(argv, "--env") | strv_push(argv, a->env.v[i]);
	if (runtime != NULL)
		rc |= strv_push(argv, "--runtime") | strv_push(argv, runtime);
	for (size_t i = 0; i < a->devices.n; i++)
		rc |= strv_push(argv, "--device") | strv_push(argv, a->devices.v[i]);
	if (a->save != NULL)
		rc |= strv_push(argv, "--save") | strv_push(argv, a->save);
	/* Checked here already (unshare_item): ctrun's own --unshare. */
	if (a->unshare != NULL)
		rc |= strv_push(argv, "--unshare") | strv_push(argv, a->unshare);
	return rc != 0 ? err_sys(e, EXIT_CTRUN, "ctrun's arguments") : 0;
}
