/* cpubind.h - which CPUs each worker of a node runs on.
 *
 * A worker's CPUs follow its GPU: the CPUs local to the GPU's NUMA node
 * (sysfs local_cpulist), intersected with what Slurm gave the task, split
 * evenly among the workers whose GPUs share that node.  When any GPU's
 * locality is unknown (no sysfs, no driver, a fake GPU) the task's CPUs
 * are split evenly among all workers, in contiguous blocks.  The planner
 * is pure (CPU sets in, CPU sets out); cpubind_gpu_local is the sysfs
 * lookup, with its roots passed in so tests can build a fake tree. */
#ifndef CTRUN_CPUBIND_H
#define CTRUN_CPUBIND_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* allowed: the task's CPUs.  gpu_local[i]: CPUs local to worker i's GPU,
 * NULL (or empty) when unknown; gpu_local itself may be NULL.  Fills
 * out[i] and pin[i] (false: leave worker i's affinity alone, as when
 * there are fewer CPUs than workers). */
void cpubind_plan(const cpu_set_t *allowed, const cpu_set_t *const *gpu_local, size_t n,
		  cpu_set_t *out, bool *pin);

/* CPUs local to a GPU named by its host index (the N of /dev/nvidiaN) or
 * UUID: the driver's procdir/gpus/BUS/information gives its PCI bus, then
 * sysfs/bus/pci/devices/BUS/local_cpulist, else its numa_node's cpulist.
 * procdir: "/proc/driver/nvidia", sysfs: "/sys".  0, or -1 when unknown. */
int cpubind_gpu_local(const char *procdir, const char *sysfs, const char *gpu, cpu_set_t *out);

struct topo;

/* For the launcher (host side, also when it plans a container's agent):
 * worker i of this ctrun, whose GPU is the one its LOCAL_RANK picks from
 * the task's GPUs, gets out; false = leave its affinity alone.  The drop-in
 * for an even split: launch_cpu_share(all, i, t->nproc, out). */
bool cpubind_worker(const cpu_set_t *allowed, const struct topo *t, long i, cpu_set_t *out);

#endif
