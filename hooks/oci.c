/* oci.c - ctrun-hook as an OCI runtime hook: state JSON on stdin, the
 * bundle's config.json, then the container's GPUs, their driver and
 * nothing else bound into its root (see hook.h). */
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "devices.h"
#include "driver.h"
#include "gpus.h"
#include "inroot.h"
#include "plan.h"
#include "rootfs.h"
#include "select.h"
#include "state.h"
#include "util.h"

static int read_stdin(char **buf, size_t *len, struct err *e)
{
	*len = 0;
	*buf = read_fd_max(STDIN_FILENO, HOOK_STATE_MAX + 1, len);
	if (*buf == NULL)
		return errno == ENOMEM ? err_sys(e, EXIT_CTRUN, "stdin")
				       : err_sys(e, EXIT_USAGE, "read the OCI state from stdin");
	if (*len > HOOK_STATE_MAX)
		return err_set(e, EXIT_USAGE, "OCI state on stdin is larger than %u bytes",
			       HOOK_STATE_MAX);
	return 0;
}

/* prestart and createRuntime hooks run in the runtime's namespaces: enter
 * the container's mount namespace (and its user namespace first when we
 * are not root, as a rootless runtime's hook is not). */
static int enter_container(long pid, struct err *e)
{
	char path[64];
	struct stat self, other;
	int userfd = -1, mntfd;

	if (pid <= 0)
		return err_set(e, EXIT_USAGE, "OCI state has no container pid, which the prestart "
			       "stage needs");
	if (xsnprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid) < 0)
		return -1;
	mntfd = open(path, O_RDONLY | O_CLOEXEC);
	if (mntfd < 0)
		return err_sys(e, EXIT_CTRUN, "container pid %ld: %s", pid, path);
	if (geteuid() != 0 && xsnprintf(path, sizeof(path), "/proc/%ld/ns/user", pid) >= 0 &&
	    stat(path, &other) == 0 && stat("/proc/self/ns/user", &self) == 0 &&
	    other.st_ino != self.st_ino) {
		userfd = open(path, O_RDONLY | O_CLOEXEC);
		if (userfd < 0 || setns(userfd, CLONE_NEWUSER) < 0) {
			err_sys(e, EXIT_CTRUN, "enter the user namespace of container pid %ld", pid);
			goto fail;
		}
		close(userfd);
		userfd = -1;
	}
	if (setns(mntfd, CLONE_NEWNS) < 0) {
		err_sys(e, EXIT_CTRUN, "enter the mount namespace of container pid %ld", pid);
		goto fail;
	}
	close(mntfd);
	return 0;
fail:
	if (userfd >= 0)
		close(userfd);
	close(mntfd);
	return -1;
}

/* The hook cannot change the process's environment (the runtime fixed it
 * before hooks run): whoever writes config.json sets CUDA_VISIBLE_DEVICES
 * to 0..n-1 (ctrun's adapter does).  Say so when it did not. */
static void warn_cuda_env(const struct hook_config *c, const struct hook_sel *s)
{
	char want[HOOK_MIG_MAX * 8];
	const char *have = NULL;
	size_t n = s->nmig > 0 ? s->nmig : s->n;

	for (size_t i = 0; i < c->env.n; i++)
		if (strncmp(c->env.v[i], "CUDA_VISIBLE_DEVICES=", 21) == 0)
			have = c->env.v[i] + 21;
	if (have == NULL || hook_sel_cuda_env(s, want, sizeof(want)) < 0 || strcmp(have, want) == 0)
		return;
	fprintf(stderr, "ctrun-hook: warning: the container has %zu %s%s, %s %s inside, but its "
		"CUDA_VISIBLE_DEVICES is %s\n", n, s->nmig > 0 ? "MIG device" : "GPU",
		n == 1 ? "" : "s", s->nmig > 0 ? "named" : "numbered", want, have);
}

/* ldconfig writes ROOT/etc/ld.so.cache as uid 0, chrooted: /etc as the
 * container sees it must be the image's own directory, not one bound from
 * the host that a relative link leads to. */
static int etc_is_the_images(const struct hook_root *r, struct err *e)
{
	int fd = inroot_open(r->fd, "/etc", O_PATH | O_DIRECTORY, 0, INROOT_CHROOT, e);
	bool same = false;
	int rv;

	if (fd < 0 && errno == ENOENT) {
		*e = (struct err){ 0 };
		return 0; /* ldconfig makes it, in the root */
	}
	if (fd < 0)
		return err_wrap(e, "/etc of the image");
	rv = hook_root_same_mount(r, fd, &same, e);
	close(fd);
	if (rv == 0 && !same)
		rv = err_set(e, EXIT_USAGE, "/etc of the image lies on another mount than the "
			     "container's root (a directory bound from the host?): refusing to run "
			     "ldconfig there");
	return rv;
}

/* The host's driver: its ld.so.cache entries and version. */
struct host_driver {
	char *cache;
	struct hook_ldcache_entry *ents;
	size_t n;
	char version[64];
};

static int plan_and_apply(const struct hook_state *st, const struct hook_config *cfg,
			  const struct hook_sel *sel, const struct host_driver *drv, bool prestart,
			  bool verbose, struct err *e)
{
	struct hook_plan plan = { .verbose = verbose };
	struct hook_root root = { .fd = -1 };
	char libdir[64];
	long nlibs;
	int rv = -1;

	/* The host's files are opened (plan_add) only once in the container's
	 * mount namespace, where they are still visible before pivot_root: a
	 * bind from a mount of another namespace fails with EINVAL. */
	if (prestart && enter_container(st->pid, e) < 0)
		goto out;
	if (hook_root_open(cfg->root, &root, e) < 0 ||
	    hook_plan_sel(sel, true, hook_sel_has_procfs(root.fd), true, &plan, e) < 0 ||
	    hook_driver_libdir(&root, libdir, sizeof(libdir), e) < 0)
		goto out;
	nlibs = hook_plan_driver(drv->ents, drv->n, drv->version, libdir, getenv("PATH"), &plan, e);
	if (nlibs < 0 || hook_plan_check(&plan, &root, e) < 0 ||
	    (nlibs > 0 && etc_is_the_images(&root, e) < 0) || hook_plan_apply(&plan, &root, e) < 0)
		goto out;
	hook_cgroup_allow(prestart ? (pid_t)st->pid : 0, &plan);
	if (nlibs > 0)
		hook_driver_ldconfig(cfg->root, libdir);
	rv = 0;
out:
	hook_root_close(&root);
	hook_plan_free(&plan);
	return rv;
}

/* IMEX channels: ctrun's annotation, else the toolkit's variable in the
 * container's environment. */
static int imex_request(const struct hook_config *cfg, struct imex_req *x, struct err *e)
{
	const char *env = NULL;

	if (cfg->ann_imex != NULL)
		return imex_parse(cfg->ann_imex, "annotation " HOOK_ANN_IMEX, x, e);
	for (size_t i = 0; i < cfg->env.n; i++)
		if (strncmp(cfg->env.v[i], "NVIDIA_IMEX_CHANNELS=", 21) == 0)
			env = cfg->env.v[i] + 21;
	return imex_parse(env, "NVIDIA_IMEX_CHANNELS", x, e);
}

static void say_choice(const char *id, const struct hook_gpu_choice *ch,
		       const struct hook_sel *s)
{
	fprintf(stderr, "ctrun-hook: container %s: %zu %s%s from %s:", id,
		s->nmig > 0 ? s->nmig : s->n, s->nmig > 0 ? "MIG device" : "GPU",
		(s->nmig > 0 ? s->nmig : s->n) == 1 ? "" : "s", ch->source);
	for (size_t i = 0; i < s->nmig; i++)
		fprintf(stderr, " %s (GPU %ld GI %u CI %u)", s->migs[i].uuid, s->migs[i].parent,
			s->migs[i].gi, s->migs[i].ci);
	for (size_t i = 0; s->nmig == 0 && i < s->n; i++)
		fprintf(stderr, " %ld", s->gpus[i].minor);
	if (s->imex.all || s->imex.n > 0)
		fprintf(stderr, "; IMEX channels from %s", s->imex.source);
	fputc('\n', stderr);
}

int hook_oci_run(const char *stage, bool verbose, struct err *e)
{
	struct hook_state st = { 0 };
	struct hook_config cfg = { 0 };
	struct hook_gpu_choice ch = { .pick = -1 };
	static struct hook_gpu_inv inv;
	static struct hook_sel sel;
	struct host_driver drv = { 0 };
	bool prestart = strcmp(stage, "prestart") == 0 || strcmp(stage, "createRuntime") == 0;
	char *buf = NULL;
	size_t len;
	int rv = -1;

	if (!prestart && strcmp(stage, "createContainer") != 0)
		return err_set(e, EXIT_USAGE, "stage '%s' is not supported: use createContainer "
			       "(or prestart/createRuntime)", stage);
	if (read_stdin(&buf, &len, e) < 0 || hook_state_parse(buf, len, &st, e) < 0 ||
	    hook_config_load(st.bundle, &cfg, e) < 0 ||
	    hook_gpus_choose(cfg.ann_gpus, cfg.ann_mode, cfg.env.v, &ch, e) < 0)
		goto out;
	if (ch.kind == HOOK_GPUS_UNSET || ch.kind == HOOK_GPUS_VOID) {
		if (verbose)
			fprintf(stderr, "ctrun-hook: container %s: no GPU requested\n", st.id);
		rv = 0;
		goto out;
	}
	hook_driver_version(drv.version, sizeof(drv.version));
	if (imex_request(&cfg, &sel.imex, e) < 0 ||
	    hook_driver_read_ldcache("/etc/ld.so.cache", &drv.cache, &drv.ents, &drv.n, e) < 0 ||
	    hook_gpu_inventory("/dev", "/proc/driver/nvidia", &inv, e) < 0 ||
	    hook_select(&ch, &inv, drv.ents, drv.n, drv.version, &sel, e) < 0)
		goto out;
	if (verbose)
		say_choice(st.id, &ch, &sel);
	warn_cuda_env(&cfg, &sel);
	rv = plan_and_apply(&st, &cfg, &sel, &drv, prestart, verbose, e);
	if (rv < 0)
		err_wrap(e, "container %s", st.id);
out:
	free(buf);
	free(drv.ents);
	free(drv.cache);
	hook_gpu_choice_free(&ch);
	hook_config_free(&cfg);
	hook_state_free(&st);
	return rv;
}
