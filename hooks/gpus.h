/* gpus.h - which GPUs a container gets.
 *
 * Two steps, both pure so unit tests can set exactly what a runtime or
 * Slurm would:
 *   hook_gpus_choose   reads the request: ctrun's annotation, else
 *                      NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES and
 *                      SLURM_STEP_GPUS from the container's environment;
 *   hook_gpus_resolve  maps it onto the GPUs the host has (index = the N of
 *                      /dev/nvidiaN, or a GPU-UUID), sorts numerically
 *                      ("10" after "9"), and in task mode keeps the one
 *                      GPU the task's local rank picks.
 * hook_gpu_inventory is the I/O half: /dev/nvidiaN and the driver's
 * /proc/driver/nvidia/gpus/<bus>/information files. */
#ifndef CTRUN_HOOK_GPUS_H
#define CTRUN_HOOK_GPUS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

#define HOOK_NVIDIA_MAJOR 195
#define HOOK_GPU_MAX 256

struct hook_gpu {
	long minor;     /* /dev/nvidiaN: N, also the device's minor number */
	char uuid[80];  /* "GPU-...", empty when the driver's procfs is absent */
	char busid[32]; /* "0000:3b:00.0", empty likewise */
};

struct hook_gpu_inv {
	struct hook_gpu v[HOOK_GPU_MAX]; /* sorted by minor */
	size_t n;
};

enum hook_gpu_kind {
	HOOK_GPUS_UNSET, /* no source named any GPU: do nothing */
	HOOK_GPUS_VOID,  /* explicitly nothing (NVIDIA_VISIBLE_DEVICES=void, empty annotation) */
	HOOK_GPUS_NONE,  /* driver libraries and control devices, no GPU (=none) */
	HOOK_GPUS_ALL,   /* every GPU of the host (=all) */
	HOOK_GPUS_LIST,  /* ids below */
};

struct hook_gpu_choice {
	enum hook_gpu_kind kind;
	struct strv ids;    /* HOOK_GPUS_LIST: host ids or GPU-UUIDs, as requested */
	const char *source; /* for messages: "annotation org.ctrun.gpus", "SLURM_STEP_GPUS", ... */
	long pick;          /* task mode: the local rank that picks one GPU; -1 = keep all */
};

/* ann_gpus/ann_mode: the annotations, NULL when absent.  env: KEY=VALUE,
 * NULL-terminated (config.json's process.env, or the hook's own
 * environment in enroot mode). */
int hook_gpus_choose(const char *ann_gpus, const char *ann_mode, char *const *env,
		     struct hook_gpu_choice *c, struct err *e);
void hook_gpu_choice_free(struct hook_gpu_choice *c);

/* Fills out[0..*n-1] with the chosen GPUs (copies of inventory entries),
 * sorted by minor.  An id the host does not have is an error naming it and
 * its source. */
int hook_gpus_resolve(const struct hook_gpu_choice *c, const struct hook_gpu_inv *inv,
		      struct hook_gpu *out, size_t *n, struct err *e);

/* devdir: "/dev"; procdir: "/proc/driver/nvidia" (may be absent). */
int hook_gpu_inventory(const char *devdir, const char *procdir, struct hook_gpu_inv *inv,
		       struct err *e);

/* One /proc/driver/nvidia/gpus/BUS/information file: "Device Minor:" and
 * "GPU UUID:".  Returns 0, or -1 when the minor is missing. */
int hook_gpu_parse_information(const char *text, long *minor, char *uuid, size_t uuid_size);

/* Whether a GPU id names a MIG device (mig.h): "MIG-..." (under 96
 * characters) or "GPU:MIG". */
bool hook_is_mig_id(const char *id);

/* "0,1,2" for n GPUs: CUDA_VISIBLE_DEVICES inside a container that has
 * exactly those GPUs. */
int hook_gpus_renumbered(size_t n, char *buf, size_t size);

#endif
