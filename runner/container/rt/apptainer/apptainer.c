/* apptainer.c - the apptainer / singularity adapter.
 *
 *   BIN [--silent] exec [--no-oci] --cleanenv [--fakeroot] [--no-home]
 *       [--nv | --contain --no-home] [--pwd DIR]
 *       (--bind SRC:DST[:ro] ... | --mount type=bind,source=..,destination=..[,ro] ...)
 *       IMAGE /.ctrun/agent /.ctrun/spec
 *
 * Always `exec`: `run` would start the image's runscript, and without one
 * `/bin/sh /.ctrun/agent`, which sh cannot read.  --entrypoint is the
 * agent's: it runs each worker through /.singularity.d/runscript (or an
 * enroot image's /etc/rc), as `apptainer run IMAGE COMMAND` does; with no
 * command (the image's default) it runs the first of them alone, else a
 * shell, as `apptainer run IMAGE` does but in every release (Singularity 3
 * has no `run` for an image it did not build: "no run driver found").
 *
 * Binds.  Both launchers apply every --bind before every --mount
 * (apptainer launcher_linux.go setBinds), so ctrun sends all of them one
 * way, in its own order (the run directory before the agent inside it, a
 * mount before one under it).  --bind when every path is plain for the
 * --bind parser: apptainer's ParseBindPath splits on ',' ':' and '^' (the
 * regexp `[^,^:]+:?`), takes '\' as an escape, and trims every piece with
 * Go's strings.TrimSpace (Unicode White_Space, not only ' ' and '\t');
 * SingularityCE's and Singularity 3's --bind is a pflag string slice, read
 * as CSV, where a '"' is an error.  Otherwise --mount, whose value is one
 * CSV record (encoding/csv, apptainer mount.go ParseMountString): a field
 * with ',' or '"' double-quoted, inner quotes doubled.  --mount exists
 * from apptainer 1.0.0 and SingularityCE 3.9.0; on older releases such a
 * path is refused naming the release.  Newlines and carriage returns are
 * refused everywhere (CSV rewrites "\r\n").
 *
 * GPUs.  `--nv` binds every GPU and the driver into /.singularity.d/libs,
 * which the agent puts on LD_LIBRARY_PATH (apptainer does so only through
 * the 99-base.sh of an image it built).  With isolation (--gpu-isolation)
 * the container gets only its GPUs: --contain (a minimal /dev) and --no-home,
 * then binds of /tmp, /dev/shm and $HOME back (what an unisolated run
 * shares), the GPUs' and control device nodes, and the driver's files
 * onto empty files in the run directory (CTR_DRIVER_DIR: a file bound onto
 * /.singularity.d/libs/X is renamed by apptainer >= 1.1 only); inside they
 * are 0..n-1.
 *
 * Environment.  --cleanenv: the container starts from the image's
 * environment and what apptainer sets; the agent completes it (the image's
 * /etc/environment when apptainer read none, the host's LANG over
 * --cleanenv's LANG=C) and layers the host's and the workers' variables
 * from its spec, so no value goes through APPTAINERENV_ or a shell.  The
 * user's APPTAINER_* / SINGULARITY_* settings (BIND, CONTAINALL, NV,
 * ...ENV_*) are removed from the runtime's environment, all but where it
 * keeps its cache and temporary files. */
#include "apptainer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers.h"
#include "gpu_pin.h"
#include "util.h"

/* The driver's own state of spec s (apptainer.h). */
#define OWN(s) ((const struct app_own *)(s)->own)

/* The code point at the start of s (n bytes), its length in *len; -1 when
 * it is not UTF-8. */
static long utf8_at(const unsigned char *s, size_t n, size_t *len)
{
	if (n >= 1 && s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if (n >= 2 && (s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*len = 2;
		return ((long)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
	}
	if (n >= 3 && (s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*len = 3;
		return ((long)(s[0] & 0x0f) << 12) | ((long)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
	}
	return -1;
}

/* Go's unicode.IsSpace: what strings.TrimSpace removes. */
static bool go_space(long c)
{
	return c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == ' ' ||
	       c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	       c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Whether the path ends with a Go space (the last code point, up to 3 bytes). */
static bool ends_in_space(const char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		size_t len;
		long c = utf8_at((const unsigned char *)p + n - k, k, &len);

		if (c >= 0 && len == k)
			return go_space(c);
	}
	return false;
}

/* A path that --bind carries unchanged in every release. */
static bool plain(const char *p)
{
	size_t n = strlen(p), len;

	return n > 0 && strpbrk(p, ",:^\\\"") == NULL &&
	       !go_space(utf8_at((const unsigned char *)p, n, &len)) && !ends_in_space(p, n);
}

/* One CSV field "key=value", quoted when the value needs it. */
static int csv_field(struct strv *out, const char *key, const char *value)
{
	size_t n = strlen(key) + 1 + 2 * strlen(value) + 3;
	char *f = malloc(n), *o = f;
	bool quote = strpbrk(value, ",\"") != NULL;

	if (f == NULL)
		return -1;
	if (quote)
		*o++ = '"';
	o += sprintf(o, "%s=", key);
	for (const char *v = value; *v != '\0'; v++) {
		if (*v == '"')
			*o++ = '"';
		*o++ = *v;
	}
	if (quote)
		*o++ = '"';
	*o = '\0';
	return strv_take(out, f);
}

static int mount_arg(const struct ctr_mount *m, struct strv *argv)
{
	struct strv fields = { 0 };
	char *joined = NULL;
	size_t len = 0;
	int ret = 0;

	ret |= strv_push(&fields, "type=bind");
	ret |= csv_field(&fields, "source", m->src);
	ret |= csv_field(&fields, "destination", m->dst);
	if (m->ro)
		ret |= strv_push(&fields, "ro");
	for (size_t i = 0; ret == 0 && i < fields.n; i++)
		len += strlen(fields.v[i]) + 1;
	if (ret == 0 && (joined = malloc(len)) != NULL) {
		char *o = joined;

		for (size_t i = 0; i < fields.n; i++)
			o += sprintf(o, "%s%s", i ? "," : "", fields.v[i]);
		ret |= strv_push(argv, "--mount");
		ret |= strv_take(argv, joined);
	} else {
		ret = -1;
	}
	strv_free(&fields);
	return ret;
}

/* Every bind, in order, all as --bind or all as --mount. */
static int bind_args(const struct ctr_spec *s, const struct ctr_mounts *binds,
		     struct ctr_plan *p, struct err *e)
{
	char name[64];
	const struct ctr_mount *odd = NULL;
	int ret = 0;

	for (size_t i = 0; i < binds->n; i++) {
		const struct ctr_mount *m = &binds->v[i];
		const char *nl = strpbrk(m->src, "\n\r") ? m->src : strpbrk(m->dst, "\n\r") ? m->dst
											 : NULL;

		if (nl != NULL)
			return err_set(e, EXIT_USAGE, "mount %s: %s cannot mount a path that contains "
				       "a newline or carriage return", nl, ctr_runtime_name(s->rt));
		if (odd == NULL && (!plain(m->src) || !plain(m->dst)))
			odd = m;
	}
	if (odd != NULL && !app_has_mount(&OWN(s)->app))
		return err_set(e, EXIT_USAGE, "mount %s:%s: %s (%s) cannot bind a path with ',' "
			       "':' '^' '\\' '\"' or blanks at either end (its --bind syntax), and "
			       "--mount needs apptainer >= 1.0 or SingularityCE >= 3.9: rename the "
			       "path or use a newer release", odd->src, odd->dst, s->bin,
			       app_version_name(&OWN(s)->app, name, sizeof(name)));
	for (size_t i = 0; ret == 0 && i < binds->n; i++) {
		const struct ctr_mount *m = &binds->v[i];

		if (odd != NULL) {
			ret = mount_arg(m, &p->argv);
		} else {
			ret |= strv_push(&p->argv, "--bind");
			ret |= strv_pushf(&p->argv, "%s:%s%s", m->src, m->dst, m->ro ? ":ro" : "");
		}
	}
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
}

/* GPUs: flags, the binds that come before the user's (isolation), the
 * agent's variables and library directories. */
static int gpu_args(const struct ctr_spec *s, struct ctr_mounts *pre, struct ctr_plan *p,
		    struct err *e)
{
	struct strv gpus = { 0 }, env = { 0 };
	bool isolate = OWN(s)->gpu_isolate && s->gpu_ids != NULL;
	int rv = -1;

	for (const char *g = s->gpu_ids; g != NULL && *g != '\0';) {
		size_t n = strcspn(g, ",");

		if (n > 0 && strv_pushn(&gpus, g, n) < 0)
			goto nomem;
		g += n + (g[n] == ',');
	}
	if (gpus.n == 0 && strv_push(&gpus, "all") < 0)
		goto nomem;
	if (isolate) {
		/* What --contain takes away and an unisolated run shares. */
		if (mounts_add(pre, "/tmp", "/tmp", false, false, e) < 0 ||
		    mounts_add(pre, "/dev/shm", "/dev/shm", false, false, e) < 0 ||
		    (OWN(s)->home[0] != '\0' && !s->no_home &&
		     mounts_add(pre, OWN(s)->home, s->as_root ? "/root" : OWN(s)->home, false, false,
				e) < 0))
			goto out;
	}
	if (app_gpu_args(&gpus, isolate, &p->argv, pre, &env, e) < 0)
		goto out;
	if (!isolate) {
		/* --nv: every GPU; the task's are named by CUDA_VISIBLE_DEVICES,
		 * which Slurm already set for a step (host ids otherwise). */
		if ((!s->slurm && s->gpu_ids != NULL && strv_extend(&p->agent_env, env.v) < 0) ||
		    strv_push(&p->agent_libdirs, "/.singularity.d/libs") < 0)
			goto nomem;
		rv = 0;
		goto out;
	}
	if (strv_push(&p->argv, "--no-home") < 0 || strv_extend(&p->agent_env, env.v) < 0 ||
	    strv_push(&p->agent_libdirs, CTR_DRIVER_DIR) < 0)
		goto nomem;
	p->gpus_renumbered = true;
	rv = 0;
	goto out;
nomem:
	err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
out:
	strv_free(&gpus);
	strv_free(&env);
	return rv;
}

/* The driver's files, each bound onto an empty file of the run directory. */
static int driver_files(const struct ctr_spec *s, struct ctr_mounts *binds, struct ctr_plan *p,
			struct err *e)
{
	const size_t prefix = strlen("/.ctrun");

	for (size_t i = 0; i < OWN(s)->driver.n; i++) {
		const struct ctr_mount *m = &OWN(s)->driver.v[i];
		char path[4096];

		if (strncmp(m->dst, CTR_DRIVER_DIR "/", strlen(CTR_DRIVER_DIR) + 1) != 0 ||
		    strchr(m->dst + strlen(CTR_DRIVER_DIR) + 1, '/') != NULL || s->rundir == NULL)
			continue;
		if (snprintf(path, sizeof(path), "%s%s", s->rundir, m->dst + prefix) >=
		    (int)sizeof(path))
			return err_set(e, EXIT_CTRUN, "%s plan: run directory path too long", s->bin);
		if (ctr_plan_file(p, path, "", 0, e) < 0 ||
		    mounts_add(binds, m->src, m->dst, true, true, e) < 0)
			return -1;
	}
	return 0;
}

/* `exec` and its flags before the binds: quiet, --no-oci, --cleanenv,
 * --writable-tmpfs, --fakeroot, --no-home; the variables it must not see. */
static int exec_args(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	static const char *const keep[] = { "APPTAINER_CACHEDIR", "APPTAINER_TMPDIR",
					    "APPTAINER_CONFIGDIR", "SINGULARITY_CACHEDIR",
					    "SINGULARITY_TMPDIR", "SINGULARITY_CONFIGDIR", NULL };
	int ret = 0;

	ret |= strv_push(&p->argv, s->bin);
	if (s->quiet) /* its INFO and WARNING lines: errors only */
		ret |= strv_push(&p->argv, "--silent");
	ret |= strv_push(&p->argv, "exec");
	if (app_has_no_oci(&OWN(s)->app))
		ret |= strv_push(&p->argv, "--no-oci");
	ret |= strv_push(&p->argv, "--cleanenv");
	/* --writable: a tmpfs over the image, apptainer.conf's `sessiondir max
	 * size`.  Singularity 3.x turns overlay off in a user namespace (no
	 * setuid starter) and wherever its sandbox conversion runs, then only
	 * warns "Ignoring --writable-tmpfs as it requires overlay support"
	 * (container_linux.go setupSessionLayout): measured as root here, the
	 * root stayed read-only and /usr writable.  It is refused rather than
	 * half-writable. */
	if (s->writable && OWN(s)->app.flavor == APP_SINGULARITY)
		return err_set(e, EXIT_CTRUN, "--writable: %s (Singularity 3.x) may ignore "
			       "--writable-tmpfs and leave the root read-only (it needs overlay "
			       "and its setuid starter): use --runtime oci or enroot, or apptainer "
			       ">= 1.0 / SingularityCE", s->bin);
	if (s->writable)
		ret |= strv_push(&p->argv, "--writable-tmpfs");
	ret |= strv_push(&p->unsetenv, "APPTAINER*");
	ret |= strv_push(&p->unsetenv, "SINGULARITY*");
	ret |= strv_extend(&p->keepenv, (char *const *)keep);
	if (ret != 0)
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	/* --root: --fakeroot (a user namespace mapping the caller to root; the
	 * home bound at /root).  Singularity 3 without setuid maps it with
	 * newuidmap from the caller's /etc/subuid and /etc/subgid ranges
	 * (prepare_linux.go of 3.4.2) and fails without them: said here. */
	if (s->as_root) {
		if (OWN(s)->app.flavor == APP_SINGULARITY && !OWN(s)->subids) {
			char v[64];

			return err_set(e, EXIT_CTRUN, "--root: %s's --fakeroot needs ranges for you in "
				       "/etc/subuid and /etc/subgid (and newuidmap): ask the "
				       "administrator for them, or use --runtime oci or enroot",
				       app_version_name(&OWN(s)->app, v, sizeof(v)));
		}
		if (strv_push(&p->argv, "--fakeroot") < 0)
			return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	}
	/* apptainer binds the home itself; --gpu-isolation's --no-home comes
	 * with its own. */
	if (s->no_home && !(s->gpus && OWN(s)->gpu_isolate && s->gpu_ids != NULL) &&
	    strv_push(&p->argv, "--no-home") < 0)
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	return 0;
}

/* The user's mounts as binds, or said why apptainer cannot make one. */
static int user_binds(const struct ctr_spec *s, struct ctr_mounts *binds, struct err *e)
{
	for (size_t i = 0; i < s->mounts.n; i++) {
		const struct ctr_mount *m = &s->mounts.v[i];

		/* --bind takes host paths only (a tmpfs is its --contain's). */
		if (m->kind == CTR_MOUNT_TMPFS)
			return err_set(e, EXIT_USAGE, "mount tmpfs:%s: %s cannot mount a tmpfs (its "
				       "--bind takes host paths only): use --runtime oci or enroot",
				       m->dst, ctr_runtime_name(s->rt));
		/* apptainer mounts every bind nosuid,nodev itself (its
		 * addUserbindsMount), and its syntax has no way to ask otherwise. */
		if (m->suid || m->dev || m->unbindable)
			return err_set(e, EXIT_USAGE, "mount %s: %s binds every path nosuid,nodev and "
				       "cannot be asked for '%s': drop the option, or use --runtime "
				       "oci or enroot", m->src, ctr_runtime_name(s->rt),
				       m->suid ? "suid" : m->dev ? "dev" : "unbindable");
		if (mounts_add_copy(binds, m, e) < 0)
			return -1;
	}
	return 0;
}

int rt_apptainer_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	__attribute__((cleanup(mounts_free))) struct ctr_mounts binds = { 0 };
	int ret = 0;

	if (s->image == NULL)
		return err_set(e, EXIT_CTRUN, "%s: no image", ctr_runtime_name(s->rt));
	if (exec_args(s, p, e) < 0)
		return -1;
	if (s->gpus && gpu_args(s, &binds, p, e) < 0)
		return -1;
	/* The agent enters the working directory itself (creating it when the
	 * image lacks it, as runc does); a shell gets --pwd. */
	if (s->cwd != NULL && !s->agent &&
	    (strv_push(&p->argv, "--pwd") < 0 || strv_push(&p->argv, s->cwd) < 0))
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	if (user_binds(s, &binds, e) < 0 ||
	    (s->gpus && OWN(s)->gpu_isolate && driver_files(s, &binds, p, e) < 0) ||
	    bind_args(s, &binds, p, e) < 0)
		return -1;
	p->agent_complete_env = true;
	if (s->entrypoint && (strv_push(&p->agent_entry, "/.singularity.d/runscript") < 0 ||
			      strv_push(&p->agent_entry, "/etc/rc") < 0))
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	ret |= strv_push(&p->argv, s->image);
	ret |= strv_extend(&p->argv, s->argv.v);
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
}

/* Whether FILE (/etc/subuid, /etc/subgid) gives the caller a range. */
static bool has_subids(const char *file, const char *name, uid_t id)
{
	char *text = read_file(file, NULL), num[32];
	bool found = false;

	if (text == NULL)
		return false;
	snprintf(num, sizeof(num), "%u:", (unsigned)id);
	for (char *l = text; l != NULL && *l != '\0' && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strlen(name);

		found = (strncmp(l, name, n) == 0 && l[n] == ':') || strncmp(l, num, strlen(num)) == 0;
	}
	free(text);
	return found;
}

/* Which release the binary is (its arguments depend on it), and whether
 * the caller has the sub-ids Singularity 3's --fakeroot needs. */
static int app_probe(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	struct app_own *own = s->own;

	(void)a;
	(void)e;
	app_version_run(s->bin, &own->app);
	own->subids = s->uid == 0 || (has_subids("/etc/subuid", s->user, s->uid) &&
				      has_subids("/etc/subgid", s->user, s->uid));
	return 0;
}

/* GPUs: --nv, or with --gpu-isolation only the container's GPUs (the
 * driver's files from ctrun-hook, chosen as it chooses them for OCI, and
 * the host's $HOME bound back). */
static int app_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	struct app_own *own = s->own;
	const char *home = envp_get(a->envp, "HOME");
	char hook[4096];
	struct stat st;

	if (!a->gpu_isolation || s->gpu_ids == NULL)
		return 0;
	own->gpu_isolate = true;
	if (home != NULL && home[0] == '/' && home[1] != '\0' && stat(home, &st) == 0 &&
	    S_ISDIR(st.st_mode) && xsnprintf(own->home, sizeof(own->home), "%s", home) < 0)
		own->home[0] = '\0';
	if (sibling_path("ctrun-hook", hook, sizeof(hook)) < 0)
		return err_set(e, EXIT_CTRUN, "--gpu-isolation with %s needs ctrun-hook next "
			       "to ctrun (%s): it names the driver's files", s->bin, hook);
	return gpu_pin_driver_binds(hook, CTR_DRIVER_DIR, &own->driver, e);
}

static void app_fini(void *p)
{
	mounts_free(&((struct app_own *)p)->driver);
}

static void app_describe(const char *bin, char *buf, size_t size)
{
	struct app_version v;

	app_version_run(bin, &v);
	app_version_name(&v, buf, size);
}

/* apptainer and singularity: one adapter, two names and binaries; which
 * release it is (spec.app) decides the arguments.  A SIF is their first
 * choice; they read a squashfs after enroot, a directory after OCI. */
const struct ctr_driver ctr_driver_apptainer = {
	.name = "apptainer",
	.bins = (const char *const[]){ "apptainer", NULL },
	.rank = { [IMAGE_SQUASHFS] = 2, [IMAGE_SIF] = 1, [IMAGE_DIR] = 2 },
	.need = ROOT_IMAGE_FILE,
	.default_cmd = DEFAULT_CMD_ENTRYPOINT,
	.own_size = sizeof(struct app_own),
	.fini = app_fini,
	.probe = app_probe,
	.gpus = app_gpus,
	.plan = rt_apptainer_plan,
	.version = app_describe,
};

const struct ctr_driver ctr_driver_singularity = {
	.name = "singularity",
	.bins = (const char *const[]){ "singularity", NULL },
	.rank = { [IMAGE_SQUASHFS] = 3, [IMAGE_SIF] = 2, [IMAGE_DIR] = 3 },
	.need = ROOT_IMAGE_FILE,
	.default_cmd = DEFAULT_CMD_ENTRYPOINT,
	.own_size = sizeof(struct app_own),
	.fini = app_fini,
	.probe = app_probe,
	.gpus = app_gpus,
	.plan = rt_apptainer_plan,
	.version = app_describe,
};
