/* mig_nvml.c - the host's MIG devices, from NVML (see mig.h).
 *
 * The host driver's libnvidia-ml is loaded at run time, as
 * libnvidia-container's driver does: the hook links nothing of the
 * driver, and a node without one never loads it (only a MIG request
 * does).  The prototypes are NVML's stable C ABI (nvml.h: nvmlDevice_t is
 * a pointer, nvmlReturn_t an int, NVML_SUCCESS 0, NVML_ERROR_NOT_FOUND 6,
 * NVML_DEVICE_MIG_ENABLE 1). */
#include "mig.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { NVML_OK = 0, NVML_NOT_FOUND = 6, NVML_MIG_ENABLE = 1, NVML_UUID_SIZE = 96 };

typedef void *nvml_dev;

struct nvml {
	void *lib;
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned *n);
	int (*by_index)(unsigned i, nvml_dev *d);
	int (*minor)(nvml_dev d, unsigned *minor);
	int (*uuid)(nvml_dev d, char *buf, unsigned len);
	int (*mig_mode)(nvml_dev d, unsigned *current, unsigned *pending);
	int (*mig_max)(nvml_dev d, unsigned *n);
	int (*mig_by_index)(nvml_dev d, unsigned i, nvml_dev *mig);
	int (*gi)(nvml_dev d, unsigned *id);
	int (*ci)(nvml_dev d, unsigned *id);
};

static int load(struct nvml *n, const char *lib, struct err *e)
{
	static const struct {
		size_t off;
		const char *name;
	} syms[] = {
		{ offsetof(struct nvml, init), "nvmlInit_v2" },
		{ offsetof(struct nvml, shutdown), "nvmlShutdown" },
		{ offsetof(struct nvml, count), "nvmlDeviceGetCount_v2" },
		{ offsetof(struct nvml, by_index), "nvmlDeviceGetHandleByIndex_v2" },
		{ offsetof(struct nvml, minor), "nvmlDeviceGetMinorNumber" },
		{ offsetof(struct nvml, uuid), "nvmlDeviceGetUUID" },
		{ offsetof(struct nvml, mig_mode), "nvmlDeviceGetMigMode" },
		{ offsetof(struct nvml, mig_max), "nvmlDeviceGetMaxMigDeviceCount" },
		{ offsetof(struct nvml, mig_by_index), "nvmlDeviceGetMigDeviceHandleByIndex" },
		{ offsetof(struct nvml, gi), "nvmlDeviceGetGpuInstanceId" },
		{ offsetof(struct nvml, ci), "nvmlDeviceGetComputeInstanceId" },
	};

	memset(n, 0, sizeof(*n));
	if (lib == NULL)
		return err_set(e, EXIT_CTRUN, "MIG devices need NVML, and the host's ld.so.cache "
			       "has no libnvidia-ml.so.1 of the driver");
	n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (n->lib == NULL)
		return err_set(e, EXIT_CTRUN, "MIG devices need NVML: %s", dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(*syms); i++) {
		void *f = dlsym(n->lib, syms[i].name);

		if (f == NULL) {
			dlclose(n->lib);
			return err_set(e, EXIT_CTRUN, "%s has no %s (a driver older than MIG?)", lib,
				       syms[i].name);
		}
		memcpy((char *)n + syms[i].off, &f, sizeof(f));
	}
	if (n->init() != NVML_OK) {
		dlclose(n->lib);
		return err_set(e, EXIT_CTRUN, "nvmlInit failed (%s): is the driver loaded?", lib);
	}
	return 0;
}

static bool wanted(const struct hook_gpu_inv *gpus, unsigned minor)
{
	for (size_t i = 0; i < gpus->n; i++)
		if (gpus->v[i].minor == (long)minor)
			return true;
	return false;
}

/* The MIG devices of one GPU, in NVML's index order. */
static int gpu_migs(const struct nvml *n, nvml_dev d, unsigned minor, struct hook_mig_inv *inv,
		    struct err *e)
{
	unsigned cur = 0, pend = 0, max = 0;

	if (n->mig_mode(d, &cur, &pend) != NVML_OK || cur != NVML_MIG_ENABLE ||
	    n->mig_max(d, &max) != NVML_OK)
		return 0;
	for (unsigned i = 0; i < max; i++) {
		struct hook_mig *m;
		nvml_dev md;
		int ret = n->mig_by_index(d, i, &md);

		if (ret == NVML_NOT_FOUND)
			continue;
		if (ret != NVML_OK)
			return err_set(e, EXIT_CTRUN, "NVML: MIG device %u of GPU %u: error %d", i,
				       minor, ret);
		if (inv->n == HOOK_MIG_MAX)
			return err_set(e, EXIT_CTRUN, "more than %d MIG devices", HOOK_MIG_MAX);
		m = &inv->v[inv->n];
		memset(m, 0, sizeof(*m));
		m->parent = minor;
		m->index = i;
		if (n->uuid(md, m->uuid, sizeof(m->uuid)) != NVML_OK || n->gi(md, &m->gi) != NVML_OK ||
		    n->ci(md, &m->ci) != NVML_OK)
			return err_set(e, EXIT_CTRUN, "NVML: MIG device %u of GPU %u: no UUID or "
				       "instance ids", i, minor);
		m->uuid[sizeof(m->uuid) - 1] = '\0';
		if (!hook_is_mig_id(m->uuid))
			return err_set(e, EXIT_CTRUN, "NVML: MIG device %u of GPU %u has the UUID "
				       "'%.40s', not MIG-...", i, minor, m->uuid);
		inv->n++;
	}
	return 0;
}

int hook_mig_inventory(const char *lib, const struct hook_gpu_inv *gpus,
		       struct hook_mig_inv *inv, struct err *e)
{
	struct nvml n;
	unsigned count = 0;
	int rv = -1;

	inv->n = 0;
	if (load(&n, lib, e) < 0)
		return -1;
	if (n.count(&count) != NVML_OK) {
		err_set(e, EXIT_CTRUN, "NVML: cannot count the GPUs");
		goto out;
	}
	for (unsigned i = 0; i < count && i < HOOK_GPU_MAX; i++) {
		unsigned minor;
		nvml_dev d;

		/* GPUs this host's /dev does not have are not ours to give. */
		if (n.by_index(i, &d) != NVML_OK || n.minor(d, &minor) != NVML_OK ||
		    !wanted(gpus, minor))
			continue;
		if (gpu_migs(&n, d, minor, inv, e) < 0)
			goto out;
	}
	rv = 0;
out:
	n.shutdown();
	dlclose(n.lib);
	return rv;
}
