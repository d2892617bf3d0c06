/* procfs.h - /proc/driver/nvidia in a container showing only its GPUs.
 *
 * As libnvidia-container does (src/nvc_mount.c mount_procfs,
 * mount_procfs_gpu): a tmpfs (mode 0555, nodev, nosuid, noexec) over the
 * container's /proc/driver/nvidia, the driver's params, version and
 * registry in it (params with "ModifyDeviceFiles: 0", so the driver's
 * user-space part does not try to make device nodes), and the directory
 * gpus/BUS of each of the container's GPUs bound read-only from the host.
 * nvidia-smi, NVML and CUDA read the list of GPUs there. */
#ifndef CTRUN_HOOK_PROCFS_H
#define CTRUN_HOOK_PROCFS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "gpus.h"
#include "plan.h"

#define HOOK_PROC_NVIDIA "/proc/driver/nvidia"

/* Plans the mask from the host's procdir (HOOK_PROC_NVIDIA) for gpus (their
 * bus ids; a GPU without one has no directory to show).  copy: the three
 * files written into the tmpfs (DATA items); else bound from the host as
 * they are (a mode that can only bind: enroot's fstab). */
int hook_plan_procfs(const char *procdir, const struct hook_gpu *gpus, size_t n, bool copy,
		     struct hook_plan *p, struct err *e);

/* Pure: "ModifyDeviceFiles: 1" becomes "ModifyDeviceFiles: 0" in params'
 * text (in place). */
void hook_procfs_params(char *text);

#endif
