/* devices.h - the GPU device nodes a container gets: exactly the chosen
 * /dev/nvidiaN, plus the driver's control nodes that exist on this host
 * (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
 * /dev/nvidia-modeset), each checked to be the character device it
 * claims to be before it is planned. */
#ifndef CTRUN_HOOK_DEVICES_H
#define CTRUN_HOOK_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "gpus.h"
#include "plan.h"

/* control: also the control nodes (needed whenever the driver is used,
 * even with no GPU: NVIDIA_VISIBLE_DEVICES=none). */
int hook_plan_devices(const struct hook_gpu *gpus, size_t n, bool control,
		      struct hook_plan *p, struct err *e);

#endif
