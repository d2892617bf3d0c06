/* enroot.c - ctrun-hook as an enroot pre-start hook (see hook.h).
 *
 * enroot runs every executable $ENROOT_SYSCONF_PATH/hooks.d/NN-name.sh, then
 * $ENROOT_CONFIG_PATH/hooks.d/NN-name.sh (NVIDIA/enroot src/runtime.sh), inside
 * the container's user and mount namespaces before it switches root, with
 * the host's environment (Slurm's variables) plus ENROOT_PID,
 * ENROOT_ROOTFS, ENROOT_ENVIRON (the container's KEY=VALUE file) and
 * ENROOT_MOUNTS (an fstab that enroot-mount applies, resolved inside the
 * root, once all hooks ran).  So this mode writes data, not mounts: env
 * lines and fstab lines; only the soname symlinks go straight into the
 * root (fstab cannot make links).
 *
 * enroot shares the host's /dev with the container unless
 * ENROOT_RESTRICT_DEV is set (then 10-devices.sh mounts a fresh tmpfs):
 *   restricted  the container gets exactly its GPU nodes; nodes of other
 *               GPUs already there (98-nvidia.sh binds every GPU of
 *               NVIDIA_VISIBLE_DEVICES=all) are removed; CUDA_VISIBLE_DEVICES
 *               becomes 0..n-1;
 *   shared      every node is visible and none can be hidden: the GPUs are
 *               pinned through CUDA_VISIBLE_DEVICES alone, by UUID when the
 *               driver tells them (indices would be relative under Slurm's
 *               device cgroup), and one warning says so. */
#include "hook.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices.h"
#include "driver.h"
#include "fstab.h"
#include "gpus.h"
#include "plan.h"
#include "rootfs.h"
#include "select.h"
#include "state.h"
#include "strv.h"
#include "util.h"

static const char *env_get(char *const *env, const char *key)
{
	size_t len = strlen(key);

	for (char *const *p = env; p != NULL && *p != NULL; p++)
		if (strncmp(*p, key, len) == 0 && (*p)[len] == '=')
			return *p + len + 1;
	return NULL;
}

static int need_path(char *const *env, const char *key, const char **out, struct err *e)
{
	*out = env_get(env, key);
	if (*out == NULL || **out == '\0')
		return err_set(e, EXIT_USAGE, "enroot mode: %s is not set (is this running as an "
			       "enroot hook?)", key);
	if (!hook_path_is_clean(*out))
		return err_set(e, EXIT_USAGE, "enroot mode: %s='%s' is not a clean absolute path",
			       key, *out);
	return 0;
}

/* Appends text to one of enroot's files: a regular file, not a link. */
static int append_file(const char *path, const char *text, struct err *e)
{
	struct stat st;
	char last = '\n';
	int fd, rv = -1;

	if (*text == '\0')
		return 0;
	fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, EXIT_USAGE, "enroot mode: %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err_set(e, EXIT_USAGE, "enroot mode: %s is not a regular file", path);
		goto out;
	}
	/* A last line without its newline would swallow our first one. */
	if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		last = '\n';
	if ((last != '\n' && write_all(fd, "\n", 1) < 0) || write_all(fd, text, strlen(text)) < 0) {
		err_sys(e, EXIT_CTRUN, "enroot mode: write %s", path);
		goto out;
	}
	rv = 0;
out:
	close(fd);
	return rv;
}

/* The container's /dev: shared with the host (enroot's default rbind) or
 * its own.  An image whose /dev is a symlink is refused outright. */
static int dev_shared(const struct hook_root *r, bool *shared, int *devfd, struct err *e)
{
	struct stat in, host;

	*devfd = openat(r->fd, "dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*devfd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return err_set(e, EXIT_USAGE, "/dev in the image is not a directory (a "
				       "symlink?): refusing");
		if (errno != ENOENT)
			return err_sys(e, EXIT_CTRUN, "%s/dev", r->path);
		*shared = false;
		return 0;
	}
	if (fstat(*devfd, &in) < 0 || stat("/dev", &host) < 0)
		return err_sys(e, EXIT_CTRUN, "/dev");
	*shared = in.st_dev == host.st_dev && in.st_ino == host.st_ino;
	return 0;
}

/* Restricted /dev: drop the nodes of GPUs that are not this task's
 * (unmounting a bind first).  Never runs on the host's /dev. */
static int remove_foreign(int devfd, const struct hook_gpu *gpus, size_t n, struct err *e)
{
	int dfd = dup(devfd);
	struct dirent *de;
	DIR *d;

	if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		return err_sys(e, EXIT_CTRUN, "container /dev");
	}
	while ((de = readdir(d)) != NULL) {
		const char *num = de->d_name + 6;
		bool mine = false;
		long minor;

		if (strncmp(de->d_name, "nvidia", 6) != 0 || *num == '\0' ||
		    strspn(num, "0123456789") != strlen(num) || parse_long(num, 0, 1 << 20, &minor) < 0)
			continue;
		for (size_t i = 0; i < n; i++)
			mine |= gpus[i].minor == minor;
		if (mine)
			continue;
		for (int tries = 0; tries < 8; tries++) {
			char p[64];
			int fd = openat(devfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			int ret = -1;

			if (fd >= 0 && hook_fd_path(fd, p, sizeof(p)) == 0)
				ret = umount2(p, MNT_DETACH);
			if (fd >= 0)
				close(fd);
			if (ret < 0)
				break; /* EINVAL: not (any more) a mount point */
		}
		if (unlinkat(devfd, de->d_name, 0) < 0 && errno != ENOENT) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "remove /dev/%s (another task's GPU) from the "
				       "container", de->d_name);
		}
	}
	closedir(d);
	return 0;
}

/* GPUs as the host names them: UUIDs when the driver reports them; MIG
 * devices by their UUIDs. */
static int host_ids(const struct hook_sel *s, char *buf, size_t size)
{
	const struct hook_gpu *gpus = s->gpus;
	size_t off = 0;

	if (s->nmig > 0)
		return hook_sel_cuda_env(s, buf, size);
	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		int w = gpus[i].uuid[0] != '\0'
			? snprintf(buf + off, size - off, "%s%s", i ? "," : "", gpus[i].uuid)
			: snprintf(buf + off, size - off, "%s%ld", i ? "," : "", gpus[i].minor);

		if (w < 0 || (size_t)w >= size - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* The driver is there already when libcuda of this version (or, with no
 * driver loaded, its soname) is: 98-nvidia.sh bound it, or the image has
 * it. */
static int fstab_lines(const struct hook_plan *p, struct strv *out)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct hook_item *it = &p->v[i];
		const char *opts = it->kind == HOOK_ITEM_DEV ? "bind,ro,nosuid,noexec,private"
				 : it->kind == HOOK_ITEM_FILE ? "bind,ro,nosuid,nodev,private"
				 : it->kind == HOOK_ITEM_PROC ? "bind,ro,nosuid,nodev,noexec,private"
				 : "bind,rw,nosuid,nodev,noexec,private";
		char all[128];

		/* DATA items are never planned here (hook_plan_sel's copy). */
		if (it->kind == HOOK_ITEM_LINK || it->kind == HOOK_ITEM_DATA)
			continue;
		if (it->kind == HOOK_ITEM_TMPFS) {
			if (fstab_line_fs(out, "tmpfs", it->dst, "tmpfs", "x-create=dir,mode=0555,"
					  "nosuid,nodev,noexec,private") < 0)
				return -1;
			continue;
		}
		snprintf(all, sizeof(all), "x-create=%s,%s", it->isdir ? "dir" : "file", opts);
		if (fstab_line(out, it->src, it->dst, all) < 0)
			return -1;
	}
	return 0;
}

/* Libraries and tools, unless the container has the driver already. */
static int plan_driver(const struct hook_root *r, struct hook_plan *files,
		       struct hook_plan *links, struct err *e)
{
	struct hook_ldcache_entry *ents = NULL;
	struct hook_plan all = { 0 };
	char *cache = NULL, libdir[64], version[64];
	size_t nents;
	int rv = -1;

	hook_driver_version(version, sizeof(version));
	if (hook_driver_libdir(r, libdir, sizeof(libdir), e) < 0)
		return -1;
	if (hook_image_has_libcuda(r, libdir, version))
		return 0;
	if (hook_driver_read_ldcache("/etc/ld.so.cache", &cache, &ents, &nents, e) < 0 ||
	    hook_plan_driver(ents, nents, version, libdir, getenv("PATH"), &all, e) < 0 ||
	    hook_plan_check(&all, r, e) < 0)
		goto out;
	for (size_t i = 0; i < all.n; i++) {
		struct hook_plan *to = all.v[i].kind == HOOK_ITEM_LINK ? links : files;

		if (hook_plan_add(to, all.v[i].kind, all.v[i].src, all.v[i].dst, e) < 0)
			goto out;
	}
	rv = 0;
out:
	hook_plan_free(&all);
	free(ents);
	free(cache);
	return rv;
}

static int configure(const struct hook_root *r, char *const *envp, const struct hook_sel *sel,
		     struct strv *env, struct strv *fstab, bool verbose, struct err *e)
{
	struct hook_plan devs = { 0 }, files = { 0 }, links = { .verbose = verbose };
	char ids[HOOK_MIG_MAX * 8], cvd[HOOK_MIG_MAX * 8];
	bool shared = false;
	int devfd = -1, rv = -1;

	if (host_ids(sel, ids, sizeof(ids)) < 0 || hook_sel_cuda_env(sel, cvd, sizeof(cvd)) < 0) {
		err_set(e, EXIT_CTRUN, "too many GPUs");
		goto out;
	}
	if (dev_shared(r, &shared, &devfd, e) < 0)
		goto out;
	if (shared) {
		const char *procid = env_get(envp, "SLURM_PROCID");

		if (procid == NULL || strcmp(procid, "0") == 0)
			fprintf(stderr, "ctrun-hook: the container shares the host's /dev (set "
				"ENROOT_RESTRICT_DEV=y to hide other GPUs); pinning GPUs %s through "
				"CUDA_VISIBLE_DEVICES only\n", ids);
		snprintf(cvd, sizeof(cvd), "%s", ids);
	} else if (devfd >= 0 && remove_foreign(devfd, sel->gpus, sel->n, e) < 0) {
		goto out;
	}
	/* Shared: the nodes are the host's already; /proc/driver/nvidia is
	 * masked either way.  enroot's fstab can only bind: the driver's
	 * files as they are. */
	if (hook_plan_sel(sel, !shared, hook_sel_has_procfs(r->fd), false, &devs, e) < 0 ||
	    hook_plan_check(&devs, r, e) < 0)
		goto out;
	if (plan_driver(r, &files, &links, e) < 0 || hook_plan_apply(&links, r, e) < 0)
		goto out;
	if (strv_pushf(env, "CUDA_VISIBLE_DEVICES=%s", cvd) < 0 ||
	    strv_pushf(env, "NVIDIA_VISIBLE_DEVICES=%s", sel->n > 0 ? ids : "none") < 0 ||
	    fstab_lines(&devs, fstab) < 0 || fstab_lines(&files, fstab) < 0) {
		err_sys(e, EXIT_CTRUN, "enroot mode");
		goto out;
	}
	rv = 0;
out:
	if (devfd >= 0)
		close(devfd);
	hook_plan_free(&devs);
	hook_plan_free(&files);
	hook_plan_free(&links);
	return rv;
}

int hook_enroot_run(char *const *envp, const char *want, const char *imex, bool verbose,
		    struct err *e)
{
	static struct hook_gpu_inv inv;
	static struct hook_sel sel;
	struct hook_ldcache_entry *ents = NULL;
	struct hook_gpu_choice ch = { .pick = -1 };
	struct hook_root root = { .fd = -1 };
	const char *rootfs, *environ_file, *mounts;
	struct strv env = { 0 }, fstab = { 0 };
	char *envtext = NULL, *fstabtext = NULL, *cache = NULL, version[64];
	size_t nents = 0;
	int rv = -1;

	if (need_path(envp, "ENROOT_ROOTFS", &rootfs, e) < 0 ||
	    need_path(envp, "ENROOT_ENVIRON", &environ_file, e) < 0 ||
	    need_path(envp, "ENROOT_MOUNTS", &mounts, e) < 0)
		return -1;
	/* The request: ctrun's (--gpus, in the hook script it added for the
	 * run), else the host's environment (Slurm's step and task
	 * variables); the image's NVIDIA_VISIBLE_DEVICES=all in ENROOT_ENVIRON
	 * is not. */
	if (hook_gpus_choose(want, NULL, envp, &ch, e) < 0)
		goto out;
	if (ch.kind == HOOK_GPUS_UNSET || ch.kind == HOOK_GPUS_VOID) {
		rv = 0;
		goto out;
	}
	/* IMEX channels: ctrun's (--imex), else the host's environment. */
	hook_driver_version(version, sizeof(version));
	if (imex_parse(imex != NULL ? imex : env_get(envp, "NVIDIA_IMEX_CHANNELS"),
			    imex != NULL ? "--imex" : "NVIDIA_IMEX_CHANNELS", &sel.imex, e) < 0 ||
	    hook_driver_read_ldcache("/etc/ld.so.cache", &cache, &ents, &nents, e) < 0 ||
	    hook_gpu_inventory("/dev", "/proc/driver/nvidia", &inv, e) < 0 ||
	    hook_select(&ch, &inv, ents, nents, version, &sel, e) < 0 ||
	    hook_root_open(rootfs, &root, e) < 0 ||
	    configure(&root, envp, &sel, &env, &fstab, verbose, e) < 0)
		goto out;
	envtext = strv_lines(&env);
	fstabtext = strv_lines(&fstab);
	if (envtext == NULL || fstabtext == NULL) {
		err_sys(e, EXIT_CTRUN, "enroot mode");
		goto out;
	}
	if (append_file(environ_file, envtext, e) < 0 || append_file(mounts, fstabtext, e) < 0)
		goto out;
	if (verbose)
		fprintf(stderr, "ctrun-hook: enroot: %zu GPU%s from %s\n%s%s", sel.n,
			sel.n == 1 ? "" : "s", ch.source, envtext, fstabtext);
	rv = 0;
out:
	hook_root_close(&root);
	hook_gpu_choice_free(&ch);
	free(ents);
	free(cache);
	strv_free(&env);
	strv_free(&fstab);
	free(envtext);
	free(fstabtext);
	return rv;
}
