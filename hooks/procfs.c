/* procfs.c - the masked /proc/driver/nvidia (see procfs.h). */
#include "procfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

#define PROC_FILE_MAX (1u << 20)

void hook_procfs_params(char *text)
{
	static const char key[] = "ModifyDeviceFiles: 1";

	for (char *p = strstr(text, key); p != NULL; p = strstr(p, key)) {
		/* Only a whole line: "ModifyDeviceFiles: 1" and its end. */
		if ((p == text || p[-1] == '\n') && (p[sizeof(key) - 1] == '\n' ||
						     p[sizeof(key) - 1] == '\0'))
			p[sizeof(key) - 2] = '0';
		p += sizeof(key) - 1;
	}
}

/* One of the driver's files into the tmpfs: a copy, or a bind. */
static int plan_file(const char *procdir, const char *name, bool copy, struct hook_plan *p,
		     struct err *e)
{
	char src[4096], dst[128], *text;
	size_t len = 0;
	int rv;

	if (xsnprintf(src, sizeof(src), "%s/%s", procdir, name) < 0 ||
	    xsnprintf(dst, sizeof(dst), HOOK_PROC_NVIDIA "/%s", name) < 0)
		return err_set(e, EXIT_CTRUN, "%s: path too long", procdir);
	if (!copy) {
		struct stat st;

		if (stat(src, &st) < 0 && errno == ENOENT)
			return 0; /* the driver has no such file (registry: older ones) */
		return hook_plan_add(p, HOOK_ITEM_PROC, src, dst, e);
	}
	text = read_file(src, &len);
	if (text == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", src);
	if (len > PROC_FILE_MAX) {
		free(text);
		return err_set(e, EXIT_CTRUN, "%s is larger than %u bytes", src, PROC_FILE_MAX);
	}
	if (strcmp(name, "params") == 0)
		hook_procfs_params(text);
	rv = hook_plan_data(p, dst, text, strlen(text), e);
	free(text);
	return rv;
}

int hook_plan_procfs(const char *procdir, const struct hook_gpu *gpus, size_t n, bool copy,
		     struct hook_plan *p, struct err *e)
{
	static const char *const files[] = { "params", "version", "registry" };

	if (hook_plan_add(p, HOOK_ITEM_TMPFS, "tmpfs", HOOK_PROC_NVIDIA, e) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++)
		if (plan_file(procdir, files[i], copy, p, e) < 0)
			return -1;
	for (size_t i = 0; i < n; i++) {
		char src[4096], dst[128];

		if (gpus[i].busid[0] == '\0')
			continue;
		if (xsnprintf(src, sizeof(src), "%s/gpus/%s", procdir, gpus[i].busid) < 0 ||
		    xsnprintf(dst, sizeof(dst), HOOK_PROC_NVIDIA "/gpus/%s", gpus[i].busid) < 0)
			return err_set(e, EXIT_CTRUN, "GPU %s: path too long", gpus[i].busid);
		if (hook_plan_add(p, HOOK_ITEM_PROC, src, dst, e) < 0)
			return -1;
	}
	return 0;
}
