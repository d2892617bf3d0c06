/* gpu.c - GPU discovery at run time: libcudart through dlopen, sysfs for
 * NUMA and local CPUs, the scheduler's ids as the fallback (see gpu.h). */
#include "gpu.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "slurmgpu.h"
#include "strv.h"
#include "util.h"

static struct cudart rt;
static int rt_state; /* 0 not tried, 1 loaded, -1 failed */
static char rt_why[200];

#define SYM(field, name) (*(void **)(&rt.field) = dlsym(rt.lib, name))

const struct cudart *cudart_load(char *why, size_t size)
{
	/* The unversioned name first (what the toolkit or the image installs),
	 * then the sonames of recent toolkits. */
	static const char *const names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
					     "libcudart.so.11.0" };

	if (rt_state == 0) {
		rt_state = -1;
		for (size_t i = 0; i < sizeof(names) / sizeof(*names) && rt.lib == NULL; i++)
			rt.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (rt.lib == NULL) {
			snprintf(rt_why, sizeof(rt_why), "libcudart not found");
		} else {
			/* CUDA 12 renamed the call whose struct grew; name and uuid
			 * sit at the start of both layouts. */
			if (SYM(GetDeviceProperties, "cudaGetDeviceProperties_v2") == NULL)
				SYM(GetDeviceProperties, "cudaGetDeviceProperties");
			if (SYM(GetDeviceCount, "cudaGetDeviceCount") && SYM(SetDevice, "cudaSetDevice") &&
			    SYM(DeviceGetPCIBusId, "cudaDeviceGetPCIBusId") &&
			    SYM(GetErrorString, "cudaGetErrorString") && SYM(Malloc, "cudaMalloc") &&
			    SYM(Free, "cudaFree") && SYM(Memcpy, "cudaMemcpy") &&
			    SYM(Memset, "cudaMemset") && SYM(MemGetInfo, "cudaMemGetInfo") &&
			    SYM(StreamCreateWithFlags, "cudaStreamCreateWithFlags") &&
			    SYM(StreamDestroy, "cudaStreamDestroy") &&
			    SYM(StreamSynchronize, "cudaStreamSynchronize") &&
			    SYM(StreamQuery, "cudaStreamQuery") &&
			    SYM(DeviceSynchronize, "cudaDeviceSynchronize") && rt.GetDeviceProperties != NULL)
				rt_state = 1;
			else
				snprintf(rt_why, sizeof(rt_why), "libcudart lacks %s", "a needed call");
		}
	}
	if (rt_state == 1)
		return &rt;
	if (why != NULL && size > 0)
		snprintf(why, size, "%s", rt_why);
	return NULL;
}

int gpu_bus_id_normalize(const char *in, char *out, size_t size)
{
	unsigned long domain;
	unsigned bus, dev, fn;
	char *end;

	/* CUDA writes "0000:07:00.0" or, like nvidia-smi, "00000000:07:00.0". */
	domain = strtoul(in, &end, 16);
	if (end == in || *end != ':' || sscanf(end + 1, "%x:%x.%x", &bus, &dev, &fn) != 3)
		return -1;
	return xsnprintf(out, size, "%04lx:%02x:%02x.%x", domain, bus, dev, fn) < 0 ? -1 : 0;
}

static void sysfs_locality(struct gpu_info *g)
{
	char path[128], *s;

	if (xsnprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", g->bus_id) >= 0 &&
	    (s = read_file(path, NULL)) != NULL) {
		long v;

		s[strcspn(s, "\n")] = '\0';
		if (parse_long(s, -1, 1 << 20, &v) == 0)
			g->numa = (int)v;
		free(s);
	}
	if (xsnprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/local_cpulist", g->bus_id) >= 0 &&
	    (s = read_file(path, NULL)) != NULL) {
		s[strcspn(s, "\n")] = '\0';
		snprintf(g->cpulist, sizeof(g->cpulist), "%s", s);
		free(s);
	}
}

/* name and uuid open cudaDeviceProp in every CUDA release since 10. */
static void cuda_properties(const struct cudart *c, struct gpu_info *g)
{
	static _Alignas(16) unsigned char prop[16384];
	const unsigned char *u = prop + 256;

	memset(prop, 0, sizeof(prop));
	if (c->GetDeviceProperties(prop, g->ordinal) != CUDA_OK)
		return;
	snprintf(g->name, sizeof(g->name), "%.*s", 95, (const char *)prop);
	snprintf(g->uuid, sizeof(g->uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

void gpu_discover(long local_rank, char *const *envp, struct gpu_info *g)
{
	const struct cudart *c;
	struct strv ids = { 0 };
	struct err e = { 0 };
	char why[160] = "";
	int count = 0, ret;

	memset(g, 0, sizeof(*g));
	g->ordinal = -1;
	g->numa = -1;
	snprintf(g->index, sizeof(g->index), "-");
	if (gpu_ids_from_env(envp, gpu_count_dev_files(), &ids, &e) < 0)
		strv_free(&ids);
	c = cudart_load(why, sizeof(why));
	if (c == NULL) {
		snprintf(g->why, sizeof(g->why), "%s", why);
	} else if ((ret = c->GetDeviceCount(&count)) != CUDA_OK || count <= 0) {
		/* No driver, or a node without GPUs: cudaErrorInsufficientDriver
		 * or cudaErrorNoDevice, said in the runtime's words. */
		snprintf(g->why, sizeof(g->why), "libcudart: %s",
			 ret != CUDA_OK ? c->GetErrorString(ret) : "no device");
	} else {
		char bus[64];

		g->cuda = true;
		g->ndevices = count;
		g->ordinal = (int)slurmgpu_pick(local_rank, (size_t)count);
		snprintf(g->index, sizeof(g->index), "%d", g->ordinal);
		if ((size_t)g->ordinal < ids.n)
			snprintf(g->index, sizeof(g->index), "%s", ids.v[g->ordinal]);
		if (c->DeviceGetPCIBusId(bus, (int)sizeof(bus), g->ordinal) == CUDA_OK &&
		    gpu_bus_id_normalize(bus, g->bus_id, sizeof(g->bus_id)) == 0)
			sysfs_locality(g);
		cuda_properties(c, g);
	}
	/* Without the runtime the scheduler still says which GPU is ours. */
	if (!g->cuda && ids.n > 0)
		snprintf(g->index, sizeof(g->index), "%s", ids.v[slurmgpu_pick(local_rank, ids.n)]);
	strv_free(&ids);
}

long gpu_count_dev_files(void)
{
	DIR *d = opendir("/dev");
	struct dirent *de;
	long n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "nvidia", 6) == 0 && isdigit((unsigned char)de->d_name[6]) &&
		    strspn(de->d_name + 6, "0123456789") == strlen(de->d_name + 6))
			n++;
	closedir(d);
	return n;
}

void numa_nodes_of(const cpu_set_t *set, char *out, size_t size)
{
	DIR *d = opendir("/sys/devices/system/node");
	struct dirent *de;
	bool nodes[1024] = { false };
	size_t len = 0;

	out[0] = '\0';
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[300], *s;
		cpu_set_t cpus, both;
		long node;

		if (strncmp(de->d_name, "node", 4) != 0 ||
		    parse_long(de->d_name + 4, 0, 1023, &node) < 0 ||
		    xsnprintf(path, sizeof(path), "/sys/devices/system/node/%s/cpulist", de->d_name) < 0)
			continue;
		s = read_file(path, NULL);
		if (s != NULL && cpulist_parse(s, &cpus) == 0) {
			CPU_AND(&both, &cpus, set);
			nodes[node] = CPU_COUNT(&both) > 0;
		}
		free(s);
	}
	closedir(d);
	for (int node = 0; node < 1024; node++) {
		int n;

		if (!nodes[node])
			continue;
		n = snprintf(out + len, size - len, "%s%d", len > 0 ? "," : "", node);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
}

int gpu_ids_from_env(char *const *envp, long ndevfiles, struct strv *out, struct err *e)
{
	static const char *const lists[] = { "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
					     "SLURM_JOB_GPUS" };
	const char *list = NULL, *on_node = envp_get(envp, "SLURM_GPUS_ON_NODE");
	long count = 0;

	for (size_t i = 0; i < sizeof(lists) / sizeof(*lists) && list == NULL; i++)
		if ((list = envp_get(envp, lists[i])) != NULL && *list == '\0')
			list = NULL;

	/* NoDevFiles (no device to name) falls through to the count. */
	if (slurmgpu_names_gpus(list))
		return slurmgpu_split(list, out) < 0 ? err_sys(e, EXIT_CTRUN, "gpus") : 0;
	if (on_node != NULL && *on_node != '\0' && parse_long(on_node, 0, 1L << 40, &count) < 0)
		return err_set(e, EXIT_CTRUN, "SLURM_GPUS_ON_NODE='%s' is not a number >= 0",
			       on_node);
	if (count == 0)
		count = ndevfiles;
	for (long i = 0; i < count; i++)
		if (strv_pushf(out, "%ld", i) < 0)
			return err_sys(e, EXIT_CTRUN, "gpus");
	return 0;
}
