/* select.c - the container's NVIDIA devices: whole GPUs or MIG devices,
 * and IMEX channels (see select.h). */
#include "select.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devices.h"
#include "driver.h"
#include "inroot.h"
#include "procfs.h"
#include "slurmgpu.h"
#include "util.h"

/* The driver's libnvidia-ml.so.1 in the host's cache: the file of this
 * driver version, as the libraries the hook binds. */
static const char *nvml_path(const struct hook_ldcache_entry *ents, size_t n,
			     const char *version, char *buf, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		char real[PATH_MAX];
		const char *base;

		if (strcmp(ents[i].key, "libnvidia-ml.so.1") != 0 ||
		    !hook_ldcache_native(ents[i].flags) || realpath(ents[i].value, real) == NULL)
			continue;
		base = strrchr(real, '/') != NULL ? strrchr(real, '/') + 1 : real;
		if (hook_driver_file_matches(base, "libnvidia-ml.so", version) &&
		    xsnprintf(buf, size, "%s", real) >= 0)
			return buf;
	}
	return NULL;
}

static int cmp_mig(const void *a, const void *b)
{
	const struct hook_mig *x = a, *y = b;

	if (x->parent != y->parent)
		return (x->parent > y->parent) - (x->parent < y->parent);
	return (x->index > y->index) - (x->index < y->index);
}

/* The parents of the chosen MIG devices, from the inventory, once each. */
static void mig_parents(const struct hook_gpu_inv *inv, struct hook_sel *s)
{
	s->n = 0;
	for (size_t i = 0; i < inv->n; i++)
		for (size_t k = 0; k < s->nmig; k++)
			if (s->migs[k].parent == inv->v[i].minor) {
				s->gpus[s->n++] = inv->v[i];
				break;
			}
}

static int select_migs(const struct hook_gpu_choice *c, const struct hook_gpu_inv *inv,
		       const char *nvml, struct hook_sel *s, struct err *e)
{
	static struct hook_mig_inv migs;

	if (hook_mig_inventory(nvml, inv, &migs, e) < 0)
		return err_wrap(e, "%s names MIG devices", c->source);
	s->nmig = 0;
	for (size_t i = 0; i < c->ids.n; i++) {
		struct hook_mig m;
		bool dup = false;

		if (hook_mig_find(&migs, c->ids.v[i], c->source, &m, e) < 0)
			return -1;
		for (size_t k = 0; k < s->nmig; k++)
			dup |= strcmp(s->migs[k].uuid, m.uuid) == 0;
		if (!dup && s->nmig < HOOK_MIG_MAX)
			s->migs[s->nmig++] = m;
	}
	qsort(s->migs, s->nmig, sizeof(s->migs[0]), cmp_mig);
	if (c->pick >= 0 && s->nmig > 0) {
		s->migs[0] = s->migs[slurmgpu_pick(c->pick, s->nmig)];
		s->nmig = 1;
	}
	mig_parents(inv, s);
	return 0;
}

int hook_select(const struct hook_gpu_choice *c, const struct hook_gpu_inv *inv,
		const struct hook_ldcache_entry *ents, size_t nents, const char *version,
		struct hook_sel *s, struct err *e)
{
	size_t nmig = 0;
	char lib[PATH_MAX];

	s->n = s->nmig = 0;
	for (size_t i = 0; c->kind == HOOK_GPUS_LIST && i < c->ids.n; i++)
		nmig += hook_is_mig_id(c->ids.v[i]);
	if (nmig == 0)
		return hook_gpus_resolve(c, inv, s->gpus, &s->n, e);
	if (nmig != c->ids.n)
		return err_set(e, EXIT_USAGE, "%s mixes whole GPUs and MIG devices: give a "
			       "container one kind", c->source);
	return select_migs(c, inv, nvml_path(ents, nents, version, lib, sizeof(lib)), s, e);
}

bool hook_sel_has_procfs(int rootfd)
{
	int fd = inroot_open(rootfd, HOOK_PROC_NVIDIA, O_PATH | O_DIRECTORY, 0, INROOT_BENEATH,
			     NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The IMEX channel nodes asked for, each checked to be the character
 * device of the driver's major with its id as the minor. */
static int plan_imex(const struct imex_req *x, long major, struct hook_plan *p, struct err *e)
{
	long ids[IMEX_REQ_MAX];
	size_t n = x->n;

	memcpy(ids, x->ids, sizeof(ids));
	if (x->all) {
		DIR *d = opendir(HOOK_IMEX_DIR);
		struct dirent *de;

		n = 0;
		while (d != NULL && (de = readdir(d)) != NULL && n < IMEX_REQ_MAX)
			if (strncmp(de->d_name, "channel", 7) == 0 &&
			    parse_long(de->d_name + 7, 0, IMEX_CHANNEL_MAX, &ids[n]) == 0)
				n++;
		if (d != NULL)
			closedir(d);
	}
	if (n > 0 && major < 0)
		return err_set(e, EXIT_CTRUN, "%s asks for IMEX channels, but /proc/devices has no "
			       "nvidia-caps-imex-channels major (a driver older than 550?)",
			       x->source);
	for (size_t i = 0; i < n; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), HOOK_IMEX_DIR "/channel%ld", ids[i]);
		if (lstat(path, &st) < 0)
			return err_sys(e, EXIT_USAGE, "%s asks for IMEX channel %ld: %s (the driver "
				       "makes it with NVreg_CreateImexChannel0=1, or nvidia-modprobe "
				       "-i %ld)", x->source, ids[i], path, ids[i]);
		if (!S_ISCHR(st.st_mode) || (long)major(st.st_rdev) != major ||
		    (long)minor(st.st_rdev) != ids[i])
			return err_set(e, EXIT_CTRUN, "%s is not the IMEX channel device %ld:%ld",
				       path, major, ids[i]);
		if (hook_plan_add(p, HOOK_ITEM_DEV, path, path, e) < 0)
			return -1;
	}
	return 0;
}

int hook_plan_sel(const struct hook_sel *s, bool nodes, bool mask, bool copy,
		  struct hook_plan *p, struct err *e)
{
	struct hook_plan scratch = { 0 };
	static struct hook_mig_minors minors;
	char *devices = read_file("/proc/devices", NULL), *text = NULL;
	long caps = -1, imex = -1;
	int rv = -1;

	if (devices != NULL) {
		caps = hook_chardev_major(devices, "nvidia-caps");
		imex = hook_chardev_major(devices, "nvidia-caps-imex-channels");
	}
	minors.n = 0;
	if (s->nmig > 0) {
		text = read_file("/proc/driver/nvidia-caps/mig-minors", NULL);
		if (text == NULL) {
			err_sys(e, EXIT_CTRUN, "MIG devices: /proc/driver/nvidia-caps/mig-minors");
			goto out;
		}
		if (hook_mig_minors_parse(text, &minors, e) < 0)
			goto out;
	}
	/* Without nodes (a /dev shared with the host) the MIG and IMEX nodes
	 * are still checked, into a plan that is not applied. */
	if ((nodes && hook_plan_devices(s->gpus, s->n, true, p, e) < 0) ||
	    (mask && hook_plan_procfs(HOOK_PROC_NVIDIA, s->gpus, s->n, copy, p, e) < 0) ||
	    hook_plan_mig(s->migs, s->nmig, &minors, caps, "/dev", nodes ? p : &scratch,
			  HOOK_PROC_NVIDIA, mask ? p : NULL, e) < 0 ||
	    plan_imex(&s->imex, imex, nodes ? p : &scratch, e) < 0)
		goto out;
	rv = 0;
out:
	hook_plan_free(&scratch);
	free(devices);
	free(text);
	return rv;
}

int hook_sel_cuda_env(const struct hook_sel *s, char *buf, size_t size)
{
	size_t off = 0;

	if (s->nmig == 0)
		return hook_gpus_renumbered(s->n, buf, size);
	buf[0] = '\0';
	for (size_t i = 0; i < s->nmig; i++) {
		int w = snprintf(buf + off, size - off, "%s%s", i ? "," : "", s->migs[i].uuid);

		if (w < 0 || (size_t)w >= size - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}
