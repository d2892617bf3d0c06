/* gpu.h - which GPU a rank drives, found at run time: the CUDA runtime
 * (libcudart, dlopen'ed, so the same binary runs on CPU-only login nodes)
 * for the device, its PCI bus id and UUID; sysfs for its NUMA node and
 * local CPUs; the scheduler's ids (CUDA_VISIBLE_DEVICES, Slurm, /dev)
 * when there is no runtime or no driver.
 *
 * Folder runner/node/: facts of this machine: GPUs (the CUDA runtime, sysfs,
 * the scheduler's ids), NUMA, network interfaces and addresses, the RDMA
 * fabric (fabric.h).  May use:
 * core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_GPU_H
#define CTRUN_GPU_H

#include <sched.h>

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

/* The few CUDA runtime calls ctrun makes, declared here so the build
 * needs no CUDA headers.  Error codes are cudaError_t values. */
enum { CUDA_OK = 0, CUDA_ERR_NOT_READY = 600 };
enum { CUDA_MEMCPY_H2D = 1, CUDA_MEMCPY_D2H = 2, CUDA_STREAM_NONBLOCKING = 1 };

struct cudart {
	void *lib;
	int (*GetDeviceCount)(int *count);
	int (*SetDevice)(int dev);
	int (*DeviceGetPCIBusId)(char *bus, int len, int dev);
	int (*GetDeviceProperties)(void *prop, int dev);
	const char *(*GetErrorString)(int err);
	int (*Malloc)(void **p, size_t size);
	int (*Free)(void *p);
	int (*Memcpy)(void *dst, const void *src, size_t size, int kind);
	int (*Memset)(void *p, int value, size_t size);
	int (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
	int (*StreamCreateWithFlags)(void **stream, unsigned flags);
	int (*StreamDestroy)(void *stream);
	int (*StreamSynchronize)(void *stream);
	int (*StreamQuery)(void *stream);
	int (*DeviceSynchronize)(void);
};

/* Loads libcudart once per process (libcudart.so, .so.13, .so.12, ...).
 * NULL when it cannot, with the reason in `why`. */
const struct cudart *cudart_load(char *why, size_t size);

struct gpu_info {
	int ordinal;        /* CUDA device ordinal this rank uses; -1 without the runtime */
	int ndevices;       /* CUDA devices this process sees (0 without the runtime) */
	char index[32];     /* the GPU as the scheduler names it (CUDA_VISIBLE_DEVICES
			     * entry), "-" when the node has none */
	char bus_id[32];    /* "0000:07:00.0", "" unknown */
	char uuid[48];      /* "GPU-xxxxxxxx-...", "" unknown */
	char name[96];      /* "NVIDIA H100 80GB HBM3", "" unknown */
	int numa;           /* the GPU's NUMA node, -1 unknown */
	char cpulist[128];  /* CPUs local to the GPU, "" unknown */
	bool cuda;          /* found through the CUDA runtime */
	char why[200];      /* without a device: why ("libcudart: CUDA driver version ...") */
};

/* The GPU of the worker with LOCAL_RANK `local_rank`, which sees the
 * devices of `envp` (CUDA_VISIBLE_DEVICES ...): the runtime's device
 * local_rank % count, like torch.cuda.set_device(LOCAL_RANK). */
void gpu_discover(long local_rank, char *const *envp, struct gpu_info *out);

/* Bus id to sysfs form: lower case, 4-digit domain ("0000:07:00.0"). */
int gpu_bus_id_normalize(const char *in, char *out, size_t size);

/* /dev/nvidiaN files (the last fallback for counting GPUs). */
long gpu_count_dev_files(void);

/* The NUMA nodes holding the CPUs of `set` ("0", "0,1"); "" when sysfs
 * has no node information. */
void numa_nodes_of(const cpu_set_t *set, char *out, size_t size);

/* GPU ids this task may use: CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS,
 * SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE, then the count of /dev/nvidiaN
 * files (topo_detect passes 0 for that inside a Slurm job: only allocated
 * GPUs count). */
int gpu_ids_from_env(char *const *envp, long ndevfiles, struct strv *out, struct err *e);

#endif
