/* appgpu.c - apptainer's and singularity's arguments for the container's
 * GPUs (apptainer.h): --nv, or --contain and the GPUs' nodes bound one by
 * one (--gpu-isolation). */
#include "apptainer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int app_gpu_args(const struct strv *gpus, bool isolate, struct strv *flags,
		      struct ctr_mounts *binds, struct strv *env, struct err *e)
{
	static const char *const control[] = { "/dev/nvidiactl", "/dev/nvidia-uvm",
					       "/dev/nvidia-uvm-tools" };
	char ids[1024], cvd[1024] = "";
	size_t off = 0;

	if (gpus->n == 0)
		return 0;
	if (strv_join(gpus, ids, sizeof(ids)) < 0)
		return err_set(e, EXIT_CTRUN, "too many GPUs");
	if (!isolate) {
		/* --nv binds every GPU of the node: CUDA_VISIBLE_DEVICES (host
		 * ids, since all are visible) is what pins the workers. */
		if (strv_push(flags, "--nv") < 0 || strv_pushf(env, "CUDA_VISIBLE_DEVICES=%s", ids) < 0)
			return err_sys(e, EXIT_CTRUN, "apptainer arguments");
		return 0;
	}
	/* --contain gives a minimal /dev; --nv would add every NVIDIA node back
	 * to it, so the GPUs, control nodes and driver files are bound one by
	 * one instead. */
	if (strv_push(flags, "--contain") < 0)
		return err_sys(e, EXIT_CTRUN, "apptainer arguments");
	for (size_t i = 0; i < gpus->n; i++) {
		char dev[64];
		long minor;
		int w;

		if (parse_long(gpus->v[i], 0, 254, &minor) < 0)
			return err_set(e, EXIT_USAGE, "GPU '%s': apptainer isolation needs GPU "
				       "indices, not UUIDs", gpus->v[i]);
		snprintf(dev, sizeof(dev), "/dev/nvidia%ld", minor);
		if (mounts_add(binds, dev, dev, false, true, e) < 0)
			return -1;
		w = snprintf(cvd + off, sizeof(cvd) - off, "%s%zu", i ? "," : "", i);
		if (w < 0 || (size_t)w >= sizeof(cvd) - off)
			return err_set(e, EXIT_CTRUN, "too many GPUs");
		off += (size_t)w;
	}
	for (size_t i = 0; i < sizeof(control) / sizeof(*control); i++)
		if (access(control[i], F_OK) == 0 &&
		    mounts_add(binds, control[i], control[i], false, true, e) < 0)
			return -1;
	if (strv_pushf(env, "CUDA_VISIBLE_DEVICES=%s", cvd) < 0)
		return err_sys(e, EXIT_CTRUN, "apptainer arguments");
	return 0;
}

