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
#include "state.h"
#include "util.h"

static int read_stdin(char **buf, size_t *len, struct err *e)
{
	size_t cap = 4096;

	*len = 0;
	*buf = malloc(cap);
	if (*buf == NULL)
		return err_sys(e, EXIT_CTRUN, "stdin");
	for (;;) {
		ssize_t r;

		if (*len == cap) {
			char *tmp;

			if (cap > HOOK_STATE_MAX)
				return err_set(e, EXIT_USAGE, "OCI state on stdin is larger than %u "
					       "bytes", HOOK_STATE_MAX);
			tmp = realloc(*buf, cap * 2);
			if (tmp == NULL)
				return err_sys(e, EXIT_CTRUN, "stdin");
			*buf = tmp;
			cap *= 2;
		}
		r = read(STDIN_FILENO, *buf + *len, cap - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err_sys(e, EXIT_USAGE, "read the OCI state from stdin");
		if (r == 0)
			return 0;
		*len += (size_t)r;
	}
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
static void warn_cuda_env(const struct hook_config *c, size_t n)
{
	char want[1024];
	const char *have = NULL;

	for (size_t i = 0; i < c->env.n; i++)
		if (strncmp(c->env.v[i], "CUDA_VISIBLE_DEVICES=", 21) == 0)
			have = c->env.v[i] + 21;
	if (have == NULL || hook_gpus_renumbered(n, want, sizeof(want)) < 0 ||
	    strcmp(have, want) == 0)
		return;
	fprintf(stderr, "ctrun-hook: warning: the container has %zu GPU%s, numbered %s inside, "
		"but its CUDA_VISIBLE_DEVICES is %s\n", n, n == 1 ? "" : "s", want, have);
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

static int plan_and_apply(const struct hook_state *st, const struct hook_config *cfg,
			  const struct hook_gpu *gpus, size_t n, bool prestart, bool verbose,
			  struct err *e)
{
	struct hook_plan plan = { .verbose = verbose };
	struct hook_root root = { .fd = -1 };
	struct hook_ldcache_entry *ents = NULL;
	char *cache = NULL, libdir[64], version[64];
	size_t nents = 0;
	long nlibs;
	int rv = -1;

	if (hook_driver_read_ldcache("/etc/ld.so.cache", &cache, &ents, &nents, e) < 0)
		goto out;
	hook_driver_version(version, sizeof(version));
	/* The host's files are opened (plan_add) only once in the container's
	 * mount namespace, where they are still visible before pivot_root: a
	 * bind from a mount of another namespace fails with EINVAL. */
	if (prestart && enter_container(st->pid, e) < 0)
		goto out;
	if (hook_plan_devices(gpus, n, true, &plan, e) < 0 || hook_root_open(cfg->root, &root, e) < 0 ||
	    hook_driver_libdir(&root, libdir, sizeof(libdir), e) < 0)
		goto out;
	nlibs = hook_plan_driver(ents, nents, version, libdir, getenv("PATH"), &plan, e);
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
	free(ents);
	free(cache);
	return rv;
}

int hook_oci_run(const char *stage, bool verbose, struct err *e)
{
	struct hook_state st = { 0 };
	struct hook_config cfg = { 0 };
	struct hook_gpu_choice ch = { .pick = -1 };
	static struct hook_gpu_inv inv;
	static struct hook_gpu gpus[HOOK_GPU_MAX];
	bool prestart = strcmp(stage, "prestart") == 0 || strcmp(stage, "createRuntime") == 0;
	char *buf = NULL;
	size_t len, n = 0;
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
	if (hook_gpu_inventory("/dev", "/proc/driver/nvidia", &inv, e) < 0 ||
	    hook_gpus_resolve(&ch, &inv, gpus, &n, e) < 0)
		goto out;
	if (verbose) {
		fprintf(stderr, "ctrun-hook: container %s: %zu GPU%s from %s:", st.id, n,
			n == 1 ? "" : "s", ch.source);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %ld", gpus[i].minor);
		fputc('\n', stderr);
	}
	warn_cuda_env(&cfg, n);
	rv = plan_and_apply(&st, &cfg, gpus, n, prestart, verbose, e);
	if (rv < 0)
		err_wrap(e, "container %s", st.id);
out:
	free(buf);
	hook_gpu_choice_free(&ch);
	hook_config_free(&cfg);
	hook_state_free(&st);
	return rv;
}
