/* cpulist.h - CPU list text ("0-3,8,10-11") to and from cpu_set_t. */
#ifndef CTRUN_CPULIST_H
#define CTRUN_CPULIST_H

#include <sched.h>
#include <stddef.h>

/* Shortest list form of `set` ("" for an empty set); -1 (ENAMETOOLONG) if
 * it does not fit. */
int cpulist_format(const cpu_set_t *set, char *out, size_t size);
/* Parses a list; one trailing newline (as sysfs writes) is allowed.
 * -1 (EINVAL) on anything else, a reversed range or a CPU >= CPU_SETSIZE. */
int cpulist_parse(const char *s, cpu_set_t *set);

#endif
