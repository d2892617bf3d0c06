/* cpubind.c - CPU affinity of a node's workers (see cpubind.h). */
#include "cpubind.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpulist.h"
#include "gpu.h"
#include "topology.h"
#include "util.h"

/* The k-th of n contiguous, even shares of `set` (the first shares get
 * the extra CPU when they do not divide). */
static void share(const cpu_set_t *set, size_t k, size_t n, cpu_set_t *out)
{
	size_t total = (size_t)CPU_COUNT(set), lo = k * total / n, hi = (k + 1) * total / n, i = 0;

	CPU_ZERO(out);
	for (size_t c = 0; c < CPU_SETSIZE && i < hi; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		if (i >= lo)
			CPU_SET(c, out);
		i++;
	}
}

/* Even split of the task's CPUs: each worker gets a block, or all keep
 * the task's affinity when there are fewer CPUs than workers. */
static void even_split(const cpu_set_t *allowed, size_t n, cpu_set_t *out, bool *pin)
{
	size_t total = (size_t)CPU_COUNT(allowed);

	for (size_t i = 0; i < n; i++) {
		pin[i] = n > 1 && total >= n;
		if (pin[i])
			share(allowed, i, n, &out[i]);
		else
			CPU_ZERO(&out[i]);
	}
}

void cpubind_plan(const cpu_set_t *allowed, const cpu_set_t *const *gpu_local, size_t n,
		  cpu_set_t *out, bool *pin)
{
	cpu_set_t *local;

	if (n == 0)
		return;
	local = calloc(n, sizeof(*local));
	if (local == NULL) {
		even_split(allowed, n, out, pin);
		return;
	}
	/* NUMA placement only when every worker's GPU is known and has CPUs
	 * in this task: a half-known node is split evenly, consistently. */
	for (size_t i = 0; i < n; i++) {
		if (gpu_local == NULL || gpu_local[i] == NULL || CPU_COUNT(gpu_local[i]) == 0)
			goto even;
		CPU_AND(&local[i], gpu_local[i], allowed);
		if (CPU_COUNT(&local[i]) == 0)
			goto even;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0, peers = 0;

		/* Workers whose GPUs share a NUMA node share its CPUs, each its
		 * own block in local-rank order; too few CPUs: all share all. */
		for (size_t j = 0; j < n; j++) {
			if (!CPU_EQUAL(&local[j], &local[i]))
				continue;
			if (j < i)
				k++;
			peers++;
		}
		if ((size_t)CPU_COUNT(&local[i]) >= peers)
			share(&local[i], k, peers, &out[i]);
		else
			out[i] = local[i];
		pin[i] = true;
	}
	free(local);
	return;
even:
	free(local);
	even_split(allowed, n, out, pin);
}

/* PCI bus of GPU `gpu` (index or UUID) from the driver's information files. */
static int gpu_bus(const char *procdir, const char *gpu, char *bus, size_t size)
{
	char path[4096];
	struct dirent *de;
	int rv = -1;
	DIR *d;

	if (xsnprintf(path, sizeof(path), "%s/gpus", procdir) < 0 || (d = opendir(path)) == NULL)
		return -1;
	while (rv < 0 && (de = readdir(d)) != NULL) {
		char *text, *minor, *uuid;

		if (de->d_name[0] == '.' ||
		    xsnprintf(path, sizeof(path), "%s/gpus/%s/information", procdir, de->d_name) < 0 ||
		    (text = read_file(path, NULL)) == NULL)
			continue;
		minor = strstr(text, "Device Minor:");
		uuid = strstr(text, "GPU UUID:");
		if (strncmp(gpu, "GPU-", 4) == 0) {
			if (uuid != NULL) {
				uuid += strlen("GPU UUID:");
				uuid += strspn(uuid, " \t");
				if (strncasecmp(uuid, gpu, strlen(gpu)) == 0 &&
				    (uuid[strlen(gpu)] == '\0' || isspace((unsigned char)uuid[strlen(gpu)])))
					rv = 0;
			}
		} else if (minor != NULL) {
			long m, want;

			minor += strlen("Device Minor:");
			minor += strspn(minor, " \t");
			minor[strcspn(minor, " \t\n")] = '\0';
			if (parse_long(minor, 0, 1 << 20, &m) == 0 && parse_long(gpu, 0, 1 << 20, &want) == 0 &&
			    m == want)
				rv = 0;
		}
		if (rv == 0 && xsnprintf(bus, size, "%s", de->d_name) < 0)
			rv = -1;
		free(text);
	}
	closedir(d);
	return rv;
}

static int read_cpulist(const char *path, cpu_set_t *out)
{
	char *text = read_file(path, NULL);
	int rv;

	if (text == NULL)
		return -1;
	rv = cpulist_parse(text, out) == 0 && CPU_COUNT(out) > 0 ? 0 : -1;
	free(text);
	return rv;
}

int cpubind_gpu_local(const char *procdir, const char *sysfs, const char *gpu, cpu_set_t *out)
{
	char bus[64], norm[64], path[4096], *text;
	long node;

	CPU_ZERO(out);
	if (gpu_bus(procdir, gpu, bus, sizeof(bus)) < 0)
		return -1;
	/* The driver writes "0000:3b:00.0"; sysfs wants lower case. */
	if (gpu_bus_id_normalize(bus, norm, sizeof(norm)) < 0)
		snprintf(norm, sizeof(norm), "%s", bus);
	if (xsnprintf(path, sizeof(path), "%s/bus/pci/devices/%s/local_cpulist", sysfs, norm) >= 0 &&
	    read_cpulist(path, out) == 0)
		return 0;
	if (xsnprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node", sysfs, norm) < 0 ||
	    (text = read_file(path, NULL)) == NULL)
		return -1;
	text[strcspn(text, "\n")] = '\0';
	if (parse_long(text, 0, 4095, &node) < 0) { /* -1: no NUMA information */
		free(text);
		return -1;
	}
	free(text);
	if (xsnprintf(path, sizeof(path), "%s/devices/system/node/node%ld/cpulist", sysfs, node) < 0)
		return -1;
	return read_cpulist(path, out);
}

bool cpubind_worker(const cpu_set_t *allowed, const struct topo *t, long i, cpu_set_t *out)
{
	size_t n = t->nproc > 0 ? (size_t)t->nproc : 1;
	cpu_set_t *local = calloc(n, sizeof(*local)), *sets = calloc(n, sizeof(*sets));
	const cpu_set_t **known = calloc(n, sizeof(*known));
	bool *pin = calloc(n, sizeof(*pin)), rv = false;

	if (local == NULL || sets == NULL || known == NULL || pin == NULL || i < 0 || (size_t)i >= n)
		goto out;
	for (size_t k = 0; k < n && t->gpus.n > 0; k++) {
		/* LOCAL_RANK picks the GPU, as torch.cuda.set_device(LOCAL_RANK). */
		size_t g = (size_t)(t->local_rank_base + (long)k) % t->gpus.n;

		if (cpubind_gpu_local("/proc/driver/nvidia", "/sys", t->gpus.v[g], &local[k]) == 0)
			known[k] = &local[k];
	}
	cpubind_plan(allowed, known, n, sets, pin);
	rv = pin[i];
	if (rv)
		*out = sets[i];
out:
	free(local);
	free(sets);
	free(known);
	free(pin);
	return rv;
}
