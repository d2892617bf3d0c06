/* gpus.c - which GPUs this ctrun's container gets, and how they are pinned
 * (see container.h): the node's device nodes, the task's GPUs as host ids,
 * ctrun-hook for OCI, apptainer's isolation, enroot's per-run hook. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "container.h"
#include "drivers.h"
#include "enrootdir.h"
#include "gpu_pin.h"
#include "slurmgpu.h"
#include "util.h"

/* Host ids for the task's GPUs: t->gpus follows CUDA_VISIBLE_DEVICES, which
 * may be relative to SLURM_STEP_GPUS (core/slurmgpu.h, the rule ctrun-hook
 * applies too); without CUDA_VISIBLE_DEVICES they are host ids already. */
static int host_ids(const struct topo *t, char *const *envp, struct strv *out, struct err *e)
{
	struct strv step = { 0 };
	int rv = 0;

	if (envp_get(envp, "CUDA_VISIBLE_DEVICES") != NULL)
		rv = slurmgpu_split(envp_get(envp, "SLURM_STEP_GPUS"), &step);
	if (rv == 0)
		rv = slurmgpu_host(&t->gpus, &step, out);
	strv_free(&step);
	return rv < 0 ? err_sys(e, EXIT_CTRUN, "gpus") : 0;
}

int gpu_pin_select(const struct topo *t, char *const *envp, struct strv *out, struct err *e)
{
	struct strv ids = { 0 };
	int rv = -1;

	if (t->gpus.n == 0)
		return 0;
	if (host_ids(t, envp, &ids, e) < 0)
		goto out;
	if (t->mode == MODE_TASK) {
		if (strv_push(out, ids.v[slurmgpu_pick(t->local_rank_base, ids.n)]) < 0) {
			err_sys(e, EXIT_CTRUN, "gpus");
			goto out;
		}
	} else if (strv_extend(out, ids.v) < 0) {
		err_sys(e, EXIT_CTRUN, "gpus");
		goto out;
	}
	rv = 0;
out:
	strv_free(&ids);
	return rv;
}


/* Whether a ctrun hook is installed where enroot reads hooks (its system
 * directory, then the user's): an executable *.sh that runs ctrun-hook. */
static bool enroot_hook_installed(const char *const *dirs)
{
	for (; *dirs != NULL; dirs++) {
		DIR *d = opendir(*dirs);
		struct dirent *de;
		bool found = false;

		while (!found && d != NULL && (de = readdir(d)) != NULL) {
			char path[PATH_MAX], text[65536];
			size_t n = strlen(de->d_name);
			ssize_t got;
			int fd;

			if (n < 4 || strcmp(de->d_name + n - 3, ".sh") != 0 ||
			    xsnprintf(path, sizeof(path), "%s/%s", *dirs, de->d_name) < 0 ||
			    access(path, X_OK) < 0 ||
			    (fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
				continue;
			got = read(fd, text, sizeof(text) - 1);
			close(fd);
			text[got > 0 ? got : 0] = '\0';
			found = strstr(text, "ctrun GPU pinning for enroot") != NULL;
		}
		if (d != NULL)
			closedir(d);
		if (found)
			return true;
	}
	return false;
}

/* enroot with GPUs: unless a ctrun hook is installed, ctrun-hook is added
 * for this run (rt/enroot/enroot.c), through a per-run ENROOT_CONFIG_PATH linking
 * every entry of the user's own.  Both directories are enroot's
 * (core/enrootdir.h); without HOME there is no user directory. */
static int enroot_hook(struct ctr_setup *c, char *const *envp, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	char sysconf[PATH_MAX], sysdir[PATH_MAX], userdir[PATH_MAX];
	DIR *d;
	struct dirent *de;

	if (enroot_sysconf_path(envp, sysconf, sizeof(sysconf)) < 0 ||
	    xsnprintf(sysdir, sizeof(sysdir), "%s/hooks.d", sysconf) < 0)
		return 0;
	if (enroot_config_path(envp, c->enroot_config, sizeof(c->enroot_config)) < 0 &&
	    errno != ENOENT)
		return 0;
	if (xsnprintf(userdir, sizeof(userdir), "%s/hooks.d", c->enroot_config) < 0)
		return 0;
	if (enroot_hook_installed((const char *const[]){ sysdir, c->enroot_config[0] ? userdir
										 : NULL, NULL }))
		return 0; /* it runs anyway: once is enough */
	if (ctr_sibling("ctrun-hook", c->hook, sizeof(c->hook)) < 0)
		return 0; /* nothing to add; the step's device cgroup still holds */
	s->enroot_hook = c->hook;
	if (c->enroot_config[0] == '\0' || (d = opendir(c->enroot_config)) == NULL)
		return 0;
	s->enroot_config = c->enroot_config;
	while ((de = readdir(d)) != NULL) {
		int rc = 0;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, "hooks.d") == 0) {
			DIR *h = opendir(userdir);
			struct dirent *he;

			while (rc == 0 && h != NULL && (he = readdir(h)) != NULL)
				if (strcmp(he->d_name, ".") != 0 && strcmp(he->d_name, "..") != 0)
					rc = strv_pushf(&s->enroot_config_entries, "hooks.d/%s",
							he->d_name);
			if (h != NULL)
				closedir(h);
		} else {
			rc = strv_push(&s->enroot_config_entries, de->d_name);
		}
		if (rc < 0) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "enroot configuration");
		}
	}
	closedir(d);
	return 0;
}

/* ctrun-agent and ctrun-hook live next to ctrun (build/, or the install's bin/). */
int ctr_sibling(const char *name, char *out, size_t size)
{
	char self[PATH_MAX], *slash;

	if (realpath("/proc/self/exe", self) == NULL)
		return -1;
	slash = strrchr(self, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	/* Next to ctrun (the build tree), else where `make install` and the
	 * Debian package put the helpers: PREFIX/libexec/ctrun. */
	if (xsnprintf(out, size, "%s/%s", self, name) < 0)
		return -1;
	if (access(out, X_OK) == 0)
		return 0;
	if (xsnprintf(out, size, "%s/../libexec/ctrun/%s", self, name) < 0 || access(out, X_OK) < 0) {
		xsnprintf(out, size, "%s/%s", self, name); /* the error names the first place */
		return -1;
	}
	return 0;
}

/* /dev/nvidia0, nvidiactl, nvidia-uvm...: the GPU device nodes of this node. */
static int gpu_devices(struct ctr_spec *s, bool collect, bool *present, struct err *e)
{
	DIR *d = opendir("/dev");
	struct dirent *de;

	*present = false;
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		struct stat st;
		struct ctr_device *v;

		if (strncmp(de->d_name, "nvidia", 6) != 0 ||
		    xsnprintf(path, sizeof(path), "/dev/%s", de->d_name) < 0 ||
		    stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
			continue;
		if (strcmp(de->d_name, "nvidiactl") == 0 ||
		    (de->d_name[6] >= '0' && de->d_name[6] <= '9'))
			*present = true;
		if (!collect)
			continue;
		v = realloc(s->devices, (s->ndevices + 1) * sizeof(*v));
		if (v == NULL) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "devices");
		}
		s->devices = v;
		v = &s->devices[s->ndevices];
		v->path = strdup(path);
		v->type = 'c';
		v->major = major(st.st_rdev);
		v->minor = minor(st.st_rdev);
		v->mode = st.st_mode & 07777;
		if (v->path == NULL) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "devices");
		}
		s->ndevices++;
	}
	closedir(d);
	return 0;
}

int ctr_gpus(struct ctr_setup *c, const struct topo *t, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	const struct ctr_ask *o = &c->ask;
	char *const *envp = o->envp;
	struct strv ids = { 0 };
	bool present;
	const char *nv = o->nv;

	if (gpu_devices(s, s->rt->gpus == GPU_PASS_HOOK, &present, e) < 0)
		return -1;
	if (strcmp(nv, "true") == 0 && !present)
		return err_set(e, EXIT_CTRUN, "GPU passthrough was requested (nv = true) but %s "
			       "has no NVIDIA GPU (no /dev/nvidia0 or /dev/nvidiactl)", t->host);
	s->gpus = strcmp(nv, "false") != 0 && present;
	if (!s->gpus) {
		for (size_t i = 0; i < s->ndevices; i++)
			free(s->devices[i].path);
		free(s->devices);
		s->devices = NULL;
		s->ndevices = 0;
		return 0;
	}
	/* Node mode: all the task's GPUs; task mode: the one of its local rank. */
	if (gpu_pin_select(t, envp, &ids, e) < 0)
		return -1;
	c->gpu_ids[0] = '\0';
	for (size_t i = 0; i < ids.n; i++) {
		size_t n = strlen(c->gpu_ids);

		if (xsnprintf(c->gpu_ids + n, sizeof(c->gpu_ids) - n, "%s%s", i ? "," : "",
			      ids.v[i]) < 0) {
			strv_free(&ids);
			return err_set(e, EXIT_CTRUN, "GPU list too long");
		}
	}
	s->gpu_ids = ids.n > 0 ? c->gpu_ids : NULL;
	strv_free(&ids);
	if (s->rt->gpus == GPU_PASS_NV && o->gpu_isolation && s->gpu_ids != NULL) {
		/* Only the container's GPUs (rt/apptainer/): the driver's files
		 * come from ctrun-hook, chosen as it chooses them for OCI. */
		const char *home = envp_get(envp, "HOME");
		struct stat st;

		s->gpu_isolate = true;
		if (home != NULL && home[0] == '/' && home[1] != '\0' && stat(home, &st) == 0 &&
		    S_ISDIR(st.st_mode) && xsnprintf(c->home, sizeof(c->home), "%s", home) >= 0)
			s->home = c->home;
		if (ctr_sibling("ctrun-hook", c->hook, sizeof(c->hook)) < 0)
			return err_set(e, EXIT_CTRUN, "--gpu-isolation with %s needs ctrun-hook next "
				       "to ctrun (%s): it names the driver's files", s->bin, c->hook);
		if (gpu_pin_driver_binds(c->hook, CTR_DRIVER_DIR, &s->driver, e) < 0)
			return -1;
	}
	if (s->rt->gpus == GPU_PASS_FILES) {
		if (ctr_sibling("ctrun-hook", c->hook, sizeof(c->hook)) < 0)
			return err_set(e, EXIT_CTRUN, "GPUs with %s need ctrun-hook next to ctrun "
				       "(%s): it names the driver's files", s->bin, c->hook);
		if (gpu_pin_driver_binds(c->hook, CTR_DRIVER_DIR, &s->driver, e) < 0)
			return -1;
	}
	if (s->rt->gpus == GPU_PASS_HOOK &&
	    ctr_sibling("ctrun-hook", c->hook, sizeof(c->hook)) == 0)
		s->hook = c->hook;
	if (s->rt->gpus == GPU_PASS_ENROOT && enroot_hook(c, envp, e) < 0)
		return -1;
	return 0;
}

