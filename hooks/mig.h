/* mig.h - MIG devices: what a container needs to use a slice of a GPU.
 *
 * A MIG device is a compute instance (CI) of a GPU instance (GI) of a
 * parent GPU.  As libnvidia-container mounts it (src/nvc_mount.c
 * nvc_mig_device_access_caps_mount) and nvidia-container-toolkit
 * describes it (internal/nvcaps), a container using one gets:
 *   - the parent's /dev/nvidiaN and the driver's control nodes;
 *   - the capability device nodes of its GI and of its CI,
 *     /dev/nvidia-caps/nvidia-capM, character devices of the major that
 *     /proc/devices calls "nvidia-caps", whose minors the driver lists in
 *     /proc/driver/nvidia-caps/mig-minors ("gpu0/gi1/access 21",
 *     "gpu0/gi1/ci0/access 22");
 *   - the proc files of those capabilities,
 *     /proc/driver/nvidia/capabilities/gpuN/mig/giG/access and
 *     .../giG/ciC/access, read-only.
 * A request names a MIG device by its UUID ("MIG-...", as `nvidia-smi -L`
 * prints it and Slurm puts it in CUDA_VISIBLE_DEVICES) or as GPU:MIG (the
 * MIG device's index on its GPU, the toolkit's NVIDIA_VISIBLE_DEVICES
 * form).  Both resolve through NVML: the host driver's libnvidia-ml,
 * loaded at run time (mig_nvml.c).  Everything else here is pure. */
#ifndef CTRUN_HOOK_MIG_H
#define CTRUN_HOOK_MIG_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "gpus.h"
#include "plan.h"

#define HOOK_MIG_MAX 512       /* MIG devices of a host: 8 GPUs x 7 x 8 with room */
#define HOOK_MIG_MINORS_MAX 4096
#define HOOK_NVCAPS_DIR "/dev/nvidia-caps"

struct hook_mig {
	long parent;    /* the parent GPU's minor (/dev/nvidiaN) */
	unsigned index; /* the MIG device's index on its parent (NVML's) */
	unsigned gi, ci;
	char uuid[96];  /* "MIG-..." */
};

struct hook_mig_inv {
	struct hook_mig v[HOOK_MIG_MAX]; /* by parent, then index */
	size_t n;
};

/* One line of mig-minors: gpuN/giG/access (ci -1), gpuN/giG/ciC/access;
 * config and monitor (gpu -1) are the global capabilities. */
struct hook_mig_minor {
	long gpu, gi, ci;
	unsigned minor;
};
struct hook_mig_minors {
	struct hook_mig_minor v[HOOK_MIG_MINORS_MAX];
	size_t n;
};

/* The major of character device driver `name` in /proc/devices' text
 * ("195 nvidia-frontend", "511 nvidia-caps"), -1 when it has none. */
long hook_chardev_major(const char *proc_devices, const char *name);

/* Parses /proc/driver/nvidia-caps/mig-minors; lines it does not know are
 * skipped (the toolkit's rule), more than HOOK_MIG_MINORS_MAX are not. */
int hook_mig_minors_parse(const char *text, struct hook_mig_minors *m, struct err *e);
/* The minor of gpuN/giG[/ciC]/access (ci < 0: the GI's), -1 when absent. */
long hook_mig_minor(const struct hook_mig_minors *m, long gpu, long gi, long ci);

/* The MIG device `id` (hook_is_mig_id) names in inv; `source` for the
 * message when it names none. */
int hook_mig_find(const struct hook_mig_inv *inv, const char *id, const char *source,
		  struct hook_mig *out, struct err *e);

/* mig_nvml.c: the host's MIG devices, from NVML at `lib` (the driver's
 * libnvidia-ml.so.1), for the GPUs in gpus (their minors).  A GPU whose
 * MIG mode is off has none. */
int hook_mig_inventory(const char *lib, const struct hook_gpu_inv *gpus,
		       struct hook_mig_inv *inv, struct err *e);

/* Plans what the MIG devices m[0..n-1] need beyond their parents' GPU
 * nodes: into nodes, the GI and CI capability nodes (devdir "/dev" on the
 * host, the same path inside), checked to be character devices of
 * caps_major with the minors of `minors`; into proc, unless it is NULL,
 * their access files from procdir/capabilities ("/proc/driver/nvidia"),
 * bound at /proc/driver/nvidia/capabilities/... inside (the container's
 * /proc/driver/nvidia is masked: procfs.h). */
int hook_plan_mig(const struct hook_mig *m, size_t n, const struct hook_mig_minors *minors,
		  long caps_major, const char *devdir, struct hook_plan *nodes,
		  const char *procdir, struct hook_plan *proc, struct err *e);

#endif
