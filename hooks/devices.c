/* devices.c - planning the GPU device nodes (see devices.h). */
#include "devices.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util.h"

/* Control nodes in the order libnvidia-container mounts them.  The UVM
 * nodes have a dynamic major, so only their type is checked. */
static const struct {
	const char *path;
	long minor; /* of major 195; -1 = any major/minor */
} control_nodes[] = {
	{ "/dev/nvidiactl", 255 },
	{ "/dev/nvidia-uvm", -1 },
	{ "/dev/nvidia-uvm-tools", -1 },
	{ "/dev/nvidia-modeset", 254 },
};

int hook_plan_devices(const struct hook_gpu *gpus, size_t n, bool control,
		      struct hook_plan *p, struct err *e)
{
	char path[64];
	struct stat st;

	for (size_t i = 0; i < n; i++) {
		if (xsnprintf(path, sizeof(path), "/dev/nvidia%ld", gpus[i].minor) < 0)
			return err_set(e, EXIT_CTRUN, "GPU %ld: bad minor", gpus[i].minor);
		if (lstat(path, &st) < 0)
			return err_sys(e, EXIT_CTRUN, "GPU %ld: %s", gpus[i].minor, path);
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != HOOK_NVIDIA_MAJOR ||
		    (long)minor(st.st_rdev) != gpus[i].minor)
			return err_set(e, EXIT_CTRUN, "%s is not the NVIDIA device %d:%ld", path,
				       HOOK_NVIDIA_MAJOR, gpus[i].minor);
		if (hook_plan_add(p, HOOK_ITEM_DEV, path, path, e) < 0)
			return -1;
	}
	for (size_t i = 0; control && i < sizeof(control_nodes) / sizeof(*control_nodes); i++) {
		const char *c = control_nodes[i].path;

		if (lstat(c, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return err_sys(e, EXIT_CTRUN, "%s", c);
		}
		if (!S_ISCHR(st.st_mode) ||
		    (control_nodes[i].minor >= 0 && (major(st.st_rdev) != HOOK_NVIDIA_MAJOR ||
						     (long)minor(st.st_rdev) != control_nodes[i].minor)))
			return err_set(e, EXIT_CTRUN, "%s is not the NVIDIA control device it should "
				       "be", c);
		if (hook_plan_add(p, HOOK_ITEM_DEV, c, c, e) < 0)
			return -1;
	}
	return 0;
}
