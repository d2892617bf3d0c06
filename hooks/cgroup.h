/* cgroup.h - letting the container open its GPU devices under a cgroup v1
 * device controller.
 *
 * A runtime's device cgroup denies every device it was not told about, so
 * a bound /dev/nvidia2 would exist yet fail to open (EPERM).  ctrun's OCI
 * adapter lists the devices in linux.resources.devices itself (runc then
 * allows them on v1 and v2); for other runtimes (hooks.d) the hook adds
 * "c MAJ:MIN rwm" to the container's v1 devices.allow, as
 * libnvidia-container does.  Best effort: rootless runtimes have no
 * writable device cgroup, and cgroup v2 device rules are eBPF programs
 * only the runtime installs. */
#ifndef CTRUN_HOOK_CGROUP_H
#define CTRUN_HOOK_CGROUP_H

#include <sys/types.h>

#include "plan.h"

/* pid: the container's process, 0 for the hook's own cgroup (the
 * createContainer hook runs inside the container's cgroups).  Returns the
 * number of rules written; never fails the hook. */
int hook_cgroup_allow(pid_t pid, const struct hook_plan *p);

#endif
