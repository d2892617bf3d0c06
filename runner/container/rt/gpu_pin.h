/* gpu_pin.h - how a container gets exactly its GPUs, what the drivers
 * share of it: the node's GPU device nodes, the driver's files ctrun-hook
 * names, and the annotations ctrun-hook reads.  Each driver's own way is
 * in its folder (rt/oci/ocigpu.c, rt/apptainer/appgpu.c,
 * rt/enroot/enroothook.c).
 *
 * The GPU ids are host ids as the task sees them (CUDA_VISIBLE_DEVICES /
 * SLURM_STEP_GPUS entries, i.e. the N of /dev/nvidiaN, or GPU-UUIDs). */
#ifndef CTRUN_GPU_PIN_H
#define CTRUN_GPU_PIN_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "mounts.h"
#include "strv.h"

/* A device node passed through (GPUs): what stat(2) says about it. */
struct ctr_device {
	char *path;
	char type; /* 'c' or 'b' */
	unsigned major, minor;
	unsigned mode; /* permission bits */
};
struct ctr_devices {
	struct ctr_device *v;
	size_t n;
};

/* The GPU device nodes of this node (/dev/nvidia0, nvidiactl, nvidia-uvm...),
 * into out (NULL: only whether there are any): present is whether a GPU or
 * the control node is there. */
int gpu_pin_nodes(struct ctr_devices *out, bool *present, struct err *e);
void gpu_pin_nodes_free(struct ctr_devices *d);

/* Annotation names shared with ctrun-hook (hooks/state.h). */
#define GPU_PIN_ANN_ENABLED "org.ctrun.enabled"
#define GPU_PIN_ANN_GPUS "org.ctrun.gpus"
#define GPU_PIN_ANN_IMEX "org.ctrun.imex-channels"

/* Runs `HOOK_PATH driver-files LIBDIR` (no shell) and collects its
 * "SRC DST" lines as read-only file binds. */
int gpu_pin_driver_binds(const char *hook_path, const char *libdir, struct ctr_mounts *out,
			 struct err *e);

#endif
