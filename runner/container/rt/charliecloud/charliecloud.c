/* charliecloud.c - the Charliecloud adapter: ch-run (0.31, Debian 12's
 * charliecloud-runtime) over a directory tree.
 *
 *   ch-run --uid=UID --gid=GID --env-no-expand [--set-env=K='V' ...]
 *          (-b RUNDIR/ovl/b/N:DST ...) (-b DRIVERFILE:/.ctrun/driver/NAME ...)
 *          [--cd=DIR] RUNDIR/rootfs -- COMMAND...
 *
 * Root.  ch-run runs a directory, or a squashfs it mounts itself with
 * squashfuse_ll; ctrun gives it a directory: the node cache's unpacked
 * tree, the image directory, or the squashfs the image holder mounted,
 * under the same overlay as the OCI adapter (overlay.c: a private mount
 * namespace, a user namespace mapping the caller to root when rootless, a
 * tmpfs upper layer holding the mount points).  Not ch-run's own squashfs
 * mount: its default mount point /var/tmp/$USER.ch/mnt is one per user and
 * node (two tasks of a step would share it), and in that mode ch-run stays
 * the parent, running the FUSE loop: SIGTERM ends that loop rather than the
 * command, and a command killed by a signal makes ch-run exit 1.  Over a
 * directory ch-run execs the command in its own process (no PID namespace),
 * so its exit status and signals are the command's.  ch-run remounts the
 * root read-only (no --write): the shared cache is never written.
 *
 * Users.  ch-run always makes a user namespace of its own (nested in
 * ctrun's when rootless) mapping --uid/--gid to the caller: the workers run
 * as the caller's uid and gid, named in the /etc/passwd and /etc/group
 * ch-run binds over the image's (both must exist in the image); with
 * --root as uid and gid 0.  ch-run's --home binds the home at
 * /home/$USER: ctrun binds it at its own path instead (ident.c).
 *
 * Binds.  ch-run's --bind SRC[:DST] splits at the first ':', binds
 * read-write (no ro in 0.31) and keeps the source mount's flags, and makes
 * a missing destination with mkdir in the image, which fails in a
 * read-only root.  So ctrun first binds every source in its private
 * namespace at RUNDIR/ovl/b/N (a path of its own, with no ':') with the
 * mount's options: read-only, nosuid, nodev unless asked (overlay.c,
 * plan.ovl_stage), and the overlay holds every destination.  ch-run itself
 * binds the host's /dev, /proc, /sys, /etc/hosts, /etc/resolv.conf,
 * /etc/machine-id and $TMPDIR (else /tmp) at /tmp, and its own /etc/passwd
 * and /etc/group; it refuses to start where /dev, /proc, /sys, /tmp,
 * /etc/passwd or /etc/group is missing ("can't bind: destination not
 * found"), and an image made with `mksquashfs -e proc sys dev`, or FROM
 * scratch, has none of them.  So those are mount points of the overlay
 * too (plan.ovl_points), made in its upper layer where the image has
 * nothing there.  Rootless, where /etc/passwd cannot be made (the image's
 * /etc is another user's: spec.no_idfile_points), ch-run gets --no-passwd
 * and the ids stay unnamed, as under runc.
 *
 * Environment.  ch-run passes its own environment on (unsetting TMPDIR,
 * appending /bin to PATH, adding CH_RUNNING); the image's (its
 * /etc/environment, spec.env) goes over it with --set-env, whose value
 * loses one pair of surrounding single quotes: each is quoted, and
 * --env-no-expand keeps '$' as it is.  The workers' variables come from
 * the agent's spec, never through ch-run.
 *
 * GPUs.  ch-run binds the host's /dev whole: every GPU node is there (the
 * Slurm step's device cgroup decides which open).  The driver's files that
 * ctrun-hook names (spec.driver) are bound onto empty files of the run
 * directory (CTR_DRIVER_DIR, on the workers' LD_LIBRARY_PATH), as for
 * apptainer: `ch-fromhost --nvidia` would write them into the image.
 *
 * Everything else (entrypoint, working directory, a terminal) is the
 * agent's or inherited: ch-run runs exactly the argv after "--" (its argp
 * parser stops there, so a command's "-v" reaches it unchanged) and leaves
 * the terminal to it. */
#include "charliecloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers.h"
#include "gpu_pin.h"
#include "util.h"

/* "--set-env=K='V'": ch-run (env_var_parse) splits at the first '=' and
 * strips one pair of single quotes when the value starts and ends with
 * one; quoting every value gives it back byte for byte. */
static int set_env(const struct ctr_spec *s, const char *kv, struct strv *argv, struct err *e)
{
	const char *eq = strchr(kv, '=');

	if (eq == NULL || eq == kv)
		return err_set(e, EXIT_CTRUN, "%s: image variable '%s' has no name", s->bin, kv);
	return strv_pushf(argv, "--set-env=%.*s='%s'", (int)(eq - kv), kv, eq + 1) < 0
		       ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin)
		       : 0;
}

/* -b STAGED:DST for every mount: STAGED is RUNDIR/ovl/b/N, where ctrun's
 * namespace binds the source with its options before exec (overlay.c). */
static int binds(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	int ret = 0;

	for (size_t i = 0; ret == 0 && i < s->mounts.n; i++) {
		/* ch-run binds the staged mount itself: an unbindable one it
		 * could not bind, and its -b has no propagation option. */
		if (s->mounts.v[i].kind == CTR_MOUNT_TMPFS)
			return err_set(e, EXIT_USAGE, "mount tmpfs:%s: %s cannot mount a tmpfs (its -b "
				       "binds host paths only): use --runtime oci or enroot",
				       s->mounts.v[i].dst, s->bin);
		if (s->mounts.v[i].unbindable)
			return err_set(e, EXIT_USAGE, "mount %s: %s cannot make a bind unbindable: "
				       "drop the option, or use --runtime oci or enroot",
				       s->mounts.v[i].src, s->bin);
		ret |= strv_push(&p->argv, "-b");
		ret |= strv_pushf(&p->argv, "%s/b/%zu:%s", p->ovl_tmp, i, s->mounts.v[i].dst);
	}
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "%s plan", s->bin) : 0;
}

/* The driver's files, each bound onto an empty file of the run directory
 * (mounted at /.ctrun): the image stays as it is. */
static int driver_files(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	const size_t prefix = strlen("/.ctrun"), dir = strlen(CTR_DRIVER_DIR);
	const struct ctr_mounts *driver = &((const struct ch_own *)s->own)->driver;

	for (size_t i = 0; i < driver->n; i++) {
		const struct ctr_mount *m = &driver->v[i];
		char path[4096];

		if (strncmp(m->dst, CTR_DRIVER_DIR "/", dir + 1) != 0 ||
		    strchr(m->dst + dir + 1, '/') != NULL)
			continue;
		if (strchr(m->src, ':') != NULL)
			return err_set(e, EXIT_CTRUN, "GPU driver file %s: ch-run cannot bind a "
				       "path that contains ':' (its --bind splits there)", m->src);
		if (snprintf(path, sizeof(path), "%s%s", s->rundir, m->dst + prefix) >=
		    (int)sizeof(path))
			return err_set(e, EXIT_CTRUN, "%s plan: run directory path too long", s->bin);
		if (ctr_plan_file(p, path, "", 0, e) < 0)
			return -1;
		if (strv_push(&p->argv, "-b") < 0 ||
		    strv_pushf(&p->argv, "%s:%s", m->src, m->dst) < 0)
			return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	}
	if (p->nfiles > 0 && strv_push(&p->agent_libdirs, CTR_DRIVER_DIR) < 0)
		return err_sys(e, EXIT_CTRUN, "%s plan", s->bin);
	return 0;
}

/* What ch-run mounts on and refuses to start without (its BINDS_DEFAULT
 * marked required, its passwd and group, its /tmp). */
static int own_points(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	static const char *const dirs[] = { "/dev", "/proc", "/sys", "/tmp", NULL };
	static const char *const files[] = { "/etc/passwd", "/etc/group", NULL };

	for (const char *const *d = dirs; *d != NULL; d++)
		if (mounts_add(&p->ovl_points, s->bin, *d, false, false, e) < 0)
			return -1;
	for (const char *const *f = files; *f != NULL && !s->no_idfile_points; f++)
		if (mounts_add(&p->ovl_points, s->bin, *f, false, true, e) < 0)
			return -1;
	return 0;
}

int rt_charliecloud_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	int ret = 0;

	if (s->rundir == NULL || s->rootfs == NULL || s->bin == NULL)
		return err_set(e, EXIT_CTRUN, "charliecloud: incomplete container description");
	if (s->kind == IMAGE_SIF)
		return err_set(e, EXIT_CTRUN, "charliecloud cannot run %s (SIF): use --runtime "
			       "apptainer, singularity or oci", s->image);
	/* The staged sources live below the run directory, and ch-run's
	 * --bind would split such a path at its ':'. */
	if (strchr(s->rundir, ':') != NULL)
		return err_set(e, EXIT_CTRUN, "charliecloud: run directory %s contains ':', "
			       "which ch-run's --bind cannot carry: set TMPDIR to a path without "
			       "one", s->rundir);
	p->ovl = true;
	p->ovl_stage = true;
	p->ovl_lower = strdup(s->holder ? s->rootfs_ns : s->rootfs);
	ret |= asprintf(&p->ovl_tmp, "%s/ovl", s->rundir) < 0 ? -1 : 0;
	ret |= asprintf(&p->ovl_merged, "%s/rootfs", s->rundir) < 0 ? -1 : 0;
	if (ret != 0 || p->ovl_lower == NULL)
		return err_sys(e, EXIT_CTRUN, "charliecloud plan");
	ret |= strv_push(&p->argv, s->bin);
	/* --root: uid 0 in ch-run's namespace, which is still the caller
	 * outside (it maps --uid to its own). */
	ret |= strv_pushf(&p->argv, "--uid=%u", s->as_root ? 0u : (unsigned)s->uid);
	ret |= strv_pushf(&p->argv, "--gid=%u", s->as_root ? 0u : (unsigned)s->gid);
	ret |= strv_push(&p->argv, "--env-no-expand");
	/* --writable: ch-run leaves the root (ctrun's overlay, its upper layer
	 * a tmpfs of the run) writable; the cache below is never written. */
	if (s->writable)
		ret |= strv_push(&p->argv, "--write");
	if (s->no_idfile_points)
		ret |= strv_push(&p->argv, "--no-passwd");
	if (ret != 0)
		return err_sys(e, EXIT_CTRUN, "charliecloud plan");
	if (own_points(s, p, e) < 0)
		return -1;
	for (size_t i = 0; i < s->env.n; i++)
		if (set_env(s, s->env.v[i], &p->argv, e) < 0)
			return -1;
	if (binds(s, p, e) < 0)
		return -1;
	if (s->gpus && driver_files(s, p, e) < 0)
		return -1;
	/* The agent enters the working directory itself (creating it when the
	 * image lacks it); a shell gets --cd. */
	if (s->cwd != NULL && !s->agent && strv_pushf(&p->argv, "--cd=%s", s->cwd) < 0)
		return err_sys(e, EXIT_CTRUN, "charliecloud plan");
	/* ch-run runs exactly the command: the agent runs it through the
	 * image's entrypoint (/etc/rc from Entrypoint and Cmd, else a SIF's
	 * runscript), and sources /.singularity.d/env, which ch-run does not. */
	if (s->entrypoint && (strv_push(&p->agent_entry, "/etc/rc") < 0 ||
			      strv_push(&p->agent_entry, "/.singularity.d/runscript") < 0))
		return err_sys(e, EXIT_CTRUN, "charliecloud plan");
	p->agent_image_scripts = true;
	p->agent_host_env = true;
	ret |= strv_push(&p->argv, p->ovl_merged);
	ret |= strv_push(&p->argv, "--");
	ret |= strv_extend(&p->argv, s->argv.v);
	/* ch-run refuses to start without $USER (its squashfs mount point and
	 * --home use it): Slurm passes the submitter's, a bare root shell may
	 * have none. */
	p->need_user = true;
	return ret != 0 ? err_sys(e, EXIT_CTRUN, "charliecloud plan") : 0;
}

/* GPUs: ch-run binds the host's /dev whole; the driver's files that
 * ctrun-hook names go in by name (the image is never written, as
 * `ch-fromhost --nvidia` would). */
static int ch_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	char hook[4096];

	(void)a;
	if (sibling_path("ctrun-hook", hook, sizeof(hook)) < 0)
		return err_set(e, EXIT_CTRUN, "GPUs with %s need ctrun-hook next to ctrun "
			       "(%s): it names the driver's files", s->bin, hook);
	return gpu_pin_driver_binds(hook, CTR_DRIVER_DIR, &((struct ch_own *)s->own)->driver, e);
}

static void ch_fini(void *p)
{
	mounts_free(&((struct ch_own *)p)->driver);
}

static const char *const rundir_dirs[] = { "rootfs", "ovl", NULL };

/* Last in auto's order for every kind it runs (it is the one runtime of
 * these that needs no setuid helper, daemon or root: a machine may have
 * only it); never a SIF (apptainer's format, mounted only by them). */
const struct ctr_driver ctr_driver_charliecloud = {
	.name = "charliecloud",
	.bins = (const char *const[]){ "ch-run", NULL },
	.rank = { [IMAGE_UNKNOWN] = 2, [IMAGE_SQUASHFS] = 5, [IMAGE_DOCKER_ARCHIVE] = 2,
		  [IMAGE_OCI_ARCHIVE] = 2, [IMAGE_DIR] = 4 },
	.need = ROOT_TREE,
	/* ch-run binds $TMPDIR (not /tmp) at /tmp, and a mount point under the
	 * image's /tmp cannot be made rootless (root's directory): ctrun binds
	 * the host's /tmp, /etc/hosts and /etc/resolv.conf as for OCI. */
	.host_files = true,
	.image_env = true,
	.rundir_dirs = rundir_dirs,
	.default_cmd = DEFAULT_CMD_ROOT,
	.ctrun_home = true,
	/* Binds only (its -b), staged with their options (overlay.c): a
	 * host's node without nodev; it binds the host's /dev whole. */
	.edits = CTR_EDIT_DEV_BINDS | CTR_EDIT_HOST_DEV,
	.own_size = sizeof(struct ch_own),
	.fini = ch_fini,
	.gpus = ch_gpus,
	.plan = rt_charliecloud_plan,
};
