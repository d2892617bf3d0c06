/* slurmgpu.h - Slurm's GPU variables, read by one rule for ctrun-hook
 * (hooks/gpus.c), the node's facts (runner/node/gpu.c) and the containers
 * (runner/container/gpus.c):
 *
 *   slurmgpu_split  a GPU list ("0,1", "GPU-<uuid>,...") into its entries;
 *                   Slurm's "NoDevFiles" (GPUs allocated from a gres.conf
 *                   without File=, so there is no device to name) and ""
 *                   name none;
 *   slurmgpu_host   CUDA_VISIBLE_DEVICES entries as host ids: Slurm numbers
 *                   them inside the step's device cgroup under
 *                   ConstrainDevices (0,1 for host GPUs 2,3 in
 *                   SLURM_STEP_GPUS), so they may be relative to that list;
 *   slurmgpu_pick   the GPU of a worker among those it sees: LOCAL_RANK %
 *                   count, as torch.cuda.set_device(LOCAL_RANK) does with
 *                   the devices it is shown.
 *
 * Pure: strings in, strings out; which variable a caller reads (first or
 * last of duplicates, SLURM_STEP_GPUS or SLURM_JOB_GPUS) stays its own. */
#ifndef CTRUN_SLURMGPU_H
#define CTRUN_SLURMGPU_H

#include <stdbool.h>
#include <stddef.h>

#include "strv.h"

/* Whether list names GPUs: set, not empty, not "NoDevFiles". */
bool slurmgpu_names_gpus(const char *list);

/* Appends list's entries to out; empty entries ("0,,1", a trailing comma)
 * are skipped, a list that names no GPU appends nothing.  No validation:
 * callers that refuse bad ids check them.  -1 (ENOMEM) or 0. */
int slurmgpu_split(const char *list, struct strv *out);

/* Appends the host ids of the `visible` entries (CUDA_VISIBLE_DEVICES)
 * to out.  `step` is the allocation's list as already split
 * (slurmgpu_split of SLURM_STEP_GPUS).  The entries are relative when
 * every one is a decimal position in step and at least one is not itself
 * among step's ids (0,1 against 2,3); each is then replaced by step's
 * entry at that position.  Otherwise, and with an empty step, they are
 * host ids already (absolute: 2,3 against 2,3; UUIDs) and copied.
 * Returns 1 when mapped, 0 when copied, -1 (ENOMEM). */
int slurmgpu_host(const struct strv *visible, const struct strv *step, struct strv *out);

/* The index of the worker's GPU among `count` it sees: local_rank %
 * count, 0 for a negative rank (none known) or no GPU. */
size_t slurmgpu_pick(long local_rank, size_t count);

#endif
