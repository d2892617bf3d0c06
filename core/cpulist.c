/* cpulist.c - Linux CPU list text ("0-3,8") to and from cpu_set_t: Slurm,
 * sysfs (local_cpulist, node cpulist) and the agent's spec all use it. */
#include "cpulist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int cpulist_format(const cpu_set_t *set, char *out, size_t size)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t c = 0; c < CPU_SETSIZE; c++) {
		size_t end = c;
		int n;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		n = end > c ? snprintf(out + o, size - o, "%s%zu-%zu", o ? "," : "", c, end)
			    : snprintf(out + o, size - o, "%s%zu", o ? "," : "", c);
		if (n < 0 || (size_t)n >= size - o) {
			errno = ENAMETOOLONG;
			return -1;
		}
		o += (size_t)n;
		c = end;
	}
	return 0;
}

int cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s != '\0') {
		char *end;
		unsigned long lo, hi;

		if (*s < '0' || *s > '9')
			goto bad;
		lo = strtoul(s, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			hi = strtoul(end + 1, &end, 10);
		}
		if (hi < lo || hi >= CPU_SETSIZE)
			goto bad;
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*end == ',' && end[1] != '\0' && end[1] != '\n')
			end++;
		else if (*end == '\n' && end[1] == '\0')
			end++; /* sysfs files end with one */
		else if (*end != '\0')
			goto bad;
		s = end;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
