/* nodehealth.h - one node's health check, run by its ctrun in the batch
 * ctrun's check step (health.h): what the next attempt needs there.
 *
 *   GPUs     every GPU Slurm gave the step on this node has its device
 *            file (/dev/nvidiaN, a character device); where the CUDA
 *            runtime and a driver answer, CUDA sees as many GPUs (a GPU
 *            that fell off the bus is gone from both);
 *   image    --image: the file (or its node-local staged copy) is there,
 *            readable and an image ctrun knows (a registry reference is
 *            pulled by the step itself: not checked);
 *   site     [run] health_check: the site's command (words split on
 *            blanks, no shell), which must exit 0 within [run]
 *            health_timeout; its first line of output says why not.
 *
 * It prints one line, "ctrun-health: HOST STEP ok" or "... bad: WHY". */
#ifndef CTRUN_NODEHEALTH_H
#define CTRUN_NODEHEALTH_H

#include <stddef.h>

#include "options.h"
#include "topology.h"

/* The checks above: 0 healthy, else -1 with why (one line). */
int nodehealth_check(const struct options *o, const struct topo *t, char *const *envp,
		     char *why, size_t size);

/* Runs the checks and prints the node's line; returns ctrun's exit status (0). */
int nodehealth_main(const struct options *o, const struct topo *t, char *const *envp);

/* GPU ids (Slurm's host ids, "0", "3") whose /dev/nvidiaN under dev is
 * missing or no character device: the first such into why.  -1 if any. */
int nodehealth_gpu_files(const char *dev, char *const *ids, char *why, size_t size);

#endif
