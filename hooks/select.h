/* select.h - what a container gets of the node's NVIDIA devices, once the
 * request is read (gpus.h hook_gpus_choose): whole GPUs or MIG devices
 * (mig.h), and IMEX channels, with everything the OCI and the enroot mode
 * then plan alike: the device nodes, the masked /proc/driver/nvidia
 * (procfs.h) and CUDA_VISIBLE_DEVICES as the container must see it.
 *
 * IMEX channels (core/imex.h: the request): the character devices
 * /dev/nvidia-caps-imex-channels/channelN of the major /proc/devices calls
 * "nvidia-caps-imex-channels", minor N, which the driver makes
 * (NVreg_CreateImexChannel0) or nvidia-modprobe does. */
#ifndef CTRUN_HOOK_SELECT_H
#define CTRUN_HOOK_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "gpus.h"
#include "imex.h"
#include "ldcache.h"
#include "mig.h"
#include "plan.h"

#define HOOK_IMEX_DIR "/dev/nvidia-caps-imex-channels"

struct hook_sel {
	/* The GPUs whose nodes the container gets: the chosen whole GPUs, or
	 * the parents of the chosen MIG devices. */
	struct hook_gpu gpus[HOOK_GPU_MAX];
	size_t n;
	struct hook_mig migs[HOOK_MIG_MAX]; /* the chosen MIG devices, nmig 0 for whole GPUs */
	size_t nmig;
	struct imex_req imex;
};

/* Fills s from the choice (its kind LIST or ALL; task mode's pick over
 * the whole GPUs or the MIG devices), the inventory of /dev/nvidiaN and,
 * when the choice names MIG devices, NVML (its path from the host's
 * ld.so.cache entries, version the driver's).  A choice that mixes whole
 * GPUs and MIG devices is refused. */
int hook_select(const struct hook_gpu_choice *c, const struct hook_gpu_inv *inv,
		const struct hook_ldcache_entry *ents, size_t nents, const char *version,
		struct hook_sel *s, struct err *e);

/* Whether the container's root has the directory /proc/driver/nvidia (its
 * procfs shows a loaded driver): then it is masked. */
bool hook_sel_has_procfs(int rootfd);

/* Plans, with nodes, the device nodes (the GPUs' /dev/nvidiaN and control
 * nodes, MIG capabilities, IMEX channels) and, with mask,
 * /proc/driver/nvidia showing only s's GPUs and MIG capabilities (copy:
 * its files written into the tmpfs, ModifyDeviceFiles off; else bound
 * from the host, for a mode that can only bind). */
int hook_plan_sel(const struct hook_sel *s, bool nodes, bool mask, bool copy,
		  struct hook_plan *p, struct err *e);

/* CUDA_VISIBLE_DEVICES inside: 0..n-1 for whole GPUs (the container has
 * exactly their nodes), the MIG devices' UUIDs for MIG. */
int hook_sel_cuda_env(const struct hook_sel *s, char *buf, size_t size);

#endif
