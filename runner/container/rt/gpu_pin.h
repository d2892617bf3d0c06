/* gpu_pin.h - how a container gets exactly its GPUs, for the runtime
 * adapters: the OCI config edits that wire in ctrun-hook, and the
 * apptainer/singularity arguments.
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

struct json_object;

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

/* Edits an OCI config.json (json-c object) so ctrun-hook gives the
 * container exactly `gpus`:
 *   annotations  org.ctrun.enabled=true, org.ctrun.gpus=IDS
 *   hooks        createContainer += {hook_path, ["ctrun-hook", "createContainer"],
 *                env: ["PATH=" ctrun's PATH]}
 *   process.env  CUDA_VISIBLE_DEVICES=0..n-1 (the container's numbering;
 *                the hook cannot change the environment once runc has it),
 *                NVIDIA_VISIBLE_DEVICES=IDS (the host's, as nvidia-docker)
 *   linux.resources.devices  allow c 195:N, 195:255 (nvidiactl), 195:254
 *                and the nvidia-uvm major, so a device cgroup lets the
 *                bound nodes open.
 * Idempotent (a second call replaces, never duplicates).  With no GPUs it
 * changes nothing. */
int gpu_pin_oci_config(struct json_object *config, const struct strv *gpus,
		       const char *hook_path, struct err *e);

/* Reads BUNDLE/config.json, applies gpu_pin_oci_config, writes it back
 * (through a temporary file and rename). */
int gpu_pin_oci_bundle(const char *bundle, const struct strv *gpus, const char *hook_path,
		       struct err *e);

/* apptainer/singularity flags, binds and worker variables for `gpus`:
 *   isolate = false  flag "--nv" (binds every GPU and the driver);
 *                    CUDA_VISIBLE_DEVICES=IDS pins the workers (host ids:
 *                    every GPU is visible in the container);
 *   isolate = true   flag "--contain" (a minimal /dev), a bind of
 *                    /dev/nvidiaN for each GPU and of the control nodes
 *                    present; CUDA_VISIBLE_DEVICES=0..n-1.  The driver's
 *                    files are the caller's (gpu_pin_driver_binds).
 * Appends to flags (before the image), binds (in order) and env (KEY=VALUE,
 * for the agent). */
int gpu_pin_apptainer(const struct strv *gpus, bool isolate, struct strv *flags,
		      struct ctr_mounts *binds, struct strv *env, struct err *e);

/* The enroot hook script (an executable *.sh enroot runs from hooks.d)
 * that execs `HOOK_PATH enroot`, and gives way quietly when HOOK_PATH is
 * gone; `why` says who wrote it.  NULL when HOOK_PATH would need quoting
 * (only [A-Za-z0-9/._+@-]) or on ENOMEM. */
char *gpu_pin_enroot_hook(const char *hook_path, const char *why);

/* Runs `HOOK_PATH driver-files LIBDIR` (no shell) and collects its
 * "SRC DST" lines as read-only file binds. */
int gpu_pin_driver_binds(const char *hook_path, const char *libdir, struct ctr_mounts *out,
			 struct err *e);

#endif
