/* mig.c - MIG devices: the ids, the driver's minors file, the plan (see
 * mig.h).  Pure but for hook_plan_mig, which opens the nodes it plans. */
#include "mig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util.h"

long hook_chardev_major(const char *proc_devices, const char *name)
{
	const char *line = proc_devices;

	while (line != NULL && *line != '\0') {
		const char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		char buf[128], dev[64];
		long major;

		/* Character devices come first; "Block devices:" ends them. */
		if (len >= 14 && strncmp(line, "Block devices:", 14) == 0)
			break;
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			if (sscanf(buf, " %ld %63s", &major, dev) == 2 && strcmp(dev, name) == 0 &&
			    major > 0 && major < 4096)
				return major;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	return -1;
}

/* "gpu0/gi1/access", "gpu0/gi1/ci0/access", "config", "monitor". */
static bool parse_cap(const char *cap, long *gpu, long *gi, long *ci)
{
	unsigned a, b, c;
	int end = 0;

	*gpu = *gi = *ci = -1;
	if (strcmp(cap, "config") == 0 || strcmp(cap, "monitor") == 0)
		return true;
	if (sscanf(cap, "gpu%u/gi%u/ci%u/access%n", &a, &b, &c, &end) == 3 &&
	    cap[end] == '\0') {
		*gpu = a, *gi = b, *ci = c;
		return a < HOOK_GPU_MAX;
	}
	end = 0;
	if (sscanf(cap, "gpu%u/gi%u/access%n", &a, &b, &end) == 2 && cap[end] == '\0') {
		*gpu = a, *gi = b;
		return a < HOOK_GPU_MAX;
	}
	return false;
}

int hook_mig_minors_parse(const char *text, struct hook_mig_minors *m, struct err *e)
{
	const char *line = text;

	m->n = 0;
	while (line != NULL && *line != '\0') {
		const char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		char buf[128], cap[96], extra[2];
		unsigned minor;
		long gpu, gi, ci;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			if (sscanf(buf, "%95s %u %1s", cap, &minor, extra) == 2 &&
			    parse_cap(cap, &gpu, &gi, &ci) && minor < (1u << 20)) {
				if (m->n == HOOK_MIG_MINORS_MAX)
					return err_set(e, EXIT_CTRUN, "mig-minors lists more than %d "
						       "capabilities", HOOK_MIG_MINORS_MAX);
				m->v[m->n++] = (struct hook_mig_minor){ gpu, gi, ci, minor };
			}
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	return 0;
}

long hook_mig_minor(const struct hook_mig_minors *m, long gpu, long gi, long ci)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].gpu == gpu && m->v[i].gi == gi && m->v[i].ci == ci)
			return m->v[i].minor;
	return -1;
}

int hook_mig_find(const struct hook_mig_inv *inv, const char *id, const char *source,
		  struct hook_mig *out, struct err *e)
{
	long gpu = -1, index = -1;
	const char *colon = strchr(id, ':');
	char num[16];

	/* GPU:MIG (hook_is_mig_id checked both are short numbers). */
	if (strncmp(id, "MIG-", 4) != 0 && colon != NULL && (size_t)(colon - id) < sizeof(num)) {
		memcpy(num, id, (size_t)(colon - id));
		num[colon - id] = '\0';
		if (parse_long(num, 0, HOOK_GPU_MAX, &gpu) < 0 ||
		    parse_long(colon + 1, 0, HOOK_MIG_MAX, &index) < 0)
			gpu = index = -1;
	}
	for (size_t i = 0; i < inv->n; i++) {
		const struct hook_mig *m = &inv->v[i];

		if (strncmp(id, "MIG-", 4) == 0 ? strcasecmp(m->uuid, id) == 0
						: m->parent == gpu && (long)m->index == index) {
			*out = *m;
			return 0;
		}
	}
	return err_set(e, EXIT_USAGE, "%s names MIG device '%s', which this host does not have "
		       "(%zu MIG device%s: %s)", source, id, inv->n, inv->n == 1 ? "" : "s",
		       inv->n > 0 ? "see nvidia-smi -L" : "is MIG mode on? nvidia-smi -mig 1");
}

/* One capability node: DEVDIR/nvidia-caps/nvidia-capM, checked to be the
 * character device caps_major:M, at /dev/nvidia-caps/nvidia-capM inside. */
static int plan_cap_node(long minor, long caps_major, const char *devdir, const char *what,
			 struct hook_plan *p, struct err *e)
{
	char src[4096], dst[64];
	struct stat st;

	if (xsnprintf(src, sizeof(src), "%s/nvidia-caps/nvidia-cap%ld", devdir, minor) < 0 ||
	    xsnprintf(dst, sizeof(dst), HOOK_NVCAPS_DIR "/nvidia-cap%ld", minor) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", what);
	if (lstat(src, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s: its capability node %s (the driver makes it with "
			       "nvidia-modprobe -f %s)", what, dst, what);
	if (!S_ISCHR(st.st_mode) || (long)major(st.st_rdev) != caps_major ||
	    (long)minor(st.st_rdev) != minor)
		return err_set(e, EXIT_CTRUN, "%s is not the nvidia-caps device %ld:%ld", dst,
			       caps_major, minor);
	return hook_plan_add(p, HOOK_ITEM_DEV, src, dst, e);
}

/* The capability of gpuN/giG[/ciC] into nodes, its access file into proc. */
static int plan_cap(const struct hook_mig *m, long ci, const struct hook_mig_minors *minors,
		    long caps_major, const char *devdir, struct hook_plan *nodes,
		    const char *procdir, struct hook_plan *proc, struct err *e)
{
	char rel[128], what[200], src[4096], dst[256];
	long minor;
	int w = ci < 0 ? snprintf(rel, sizeof(rel), "gpu%ld/mig/gi%u/access", m->parent, m->gi)
		       : snprintf(rel, sizeof(rel), "gpu%ld/mig/gi%u/ci%ld/access", m->parent, m->gi,
				  ci);

	if (w < 0 || (size_t)w >= sizeof(rel))
		return err_set(e, EXIT_CTRUN, "MIG device %s: path too long", m->uuid);
	snprintf(what, sizeof(what), "/proc/driver/nvidia/capabilities/%s", rel);
	minor = hook_mig_minor(minors, m->parent, m->gi, ci);
	if (minor < 0)
		return err_set(e, EXIT_CTRUN, "MIG device %s: /proc/driver/nvidia-caps/mig-minors "
			       "has no minor for %s", m->uuid, rel);
	if (plan_cap_node(minor, caps_major, devdir, what, nodes, e) < 0)
		return -1;
	if (proc == NULL)
		return 0;
	if (xsnprintf(src, sizeof(src), "%s/capabilities/%s", procdir, rel) < 0 ||
	    xsnprintf(dst, sizeof(dst), "/proc/driver/nvidia/capabilities/%s", rel) < 0)
		return err_set(e, EXIT_CTRUN, "MIG device %s: path too long", m->uuid);
	return hook_plan_add(proc, HOOK_ITEM_PROC, src, dst, e);
}

int hook_plan_mig(const struct hook_mig *m, size_t n, const struct hook_mig_minors *minors,
		  long caps_major, const char *devdir, struct hook_plan *nodes,
		  const char *procdir, struct hook_plan *proc, struct err *e)
{
	if (n > 0 && caps_major < 0)
		return err_set(e, EXIT_CTRUN, "MIG device %s: /proc/devices has no nvidia-caps "
			       "major (is the driver loaded?)", m[0].uuid);
	for (size_t i = 0; i < n; i++)
		if (plan_cap(&m[i], -1, minors, caps_major, devdir, nodes, procdir, proc, e) < 0 ||
		    plan_cap(&m[i], m[i].ci, minors, caps_major, devdir, nodes, procdir, proc, e) < 0)
			return -1;
	return 0;
}
