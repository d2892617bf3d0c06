/* gpus.c - the GPU phase (see container.h): whether this ctrun's container
 * gets GPUs (the node's device nodes, --nv) and which (the task's, as host
 * ids); how the runtime passes them is its driver's (drivers.h gpus). */
#include <stdbool.h>
#include <string.h>

#include "container.h"
#include "drivers.h"
#include "gpu_pin.h"
#include "slurmgpu.h"
#include "util.h"

/* Host ids for the task's GPUs: t->gpus follows CUDA_VISIBLE_DEVICES, which
 * may be relative to SLURM_STEP_GPUS (core/slurmgpu.h, the rule ctrun-hook
 * applies too); without CUDA_VISIBLE_DEVICES they are host ids already. */
static int host_ids(const struct topo *t, char *const *envp, struct strv *out, struct err *e)
{
	struct strv step = { 0 };
	int rv = 0;

	if (envp_get(envp, "CUDA_VISIBLE_DEVICES") != NULL)
		rv = slurmgpu_split(envp_get(envp, "SLURM_STEP_GPUS"), &step);
	if (rv == 0)
		rv = slurmgpu_host(&t->gpus, &step, out);
	strv_free(&step);
	return rv < 0 ? err_sys(e, EXIT_CTRUN, "gpus") : 0;
}

int gpu_pin_select(const struct topo *t, char *const *envp, struct strv *out, struct err *e)
{
	struct strv ids = { 0 };
	int rv = -1;

	if (t->gpus.n == 0)
		return 0;
	if (host_ids(t, envp, &ids, e) < 0)
		goto out;
	if (t->mode == MODE_TASK) {
		if (strv_push(out, ids.v[slurmgpu_pick(t->local_rank_base, ids.n)]) < 0) {
			err_sys(e, EXIT_CTRUN, "gpus");
			goto out;
		}
	} else if (strv_extend(out, ids.v) < 0) {
		err_sys(e, EXIT_CTRUN, "gpus");
		goto out;
	}
	rv = 0;
out:
	strv_free(&ids);
	return rv;
}


int ctr_gpus(struct ctr_setup *c, const struct topo *t, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	const struct ctr_ask *o = &c->ask;
	struct strv ids = { 0 };
	bool present, cdi;

	if (gpu_pin_nodes(NULL, &present, e) < 0)
		return -1;
	if (strcmp(o->nv, "true") == 0 && !present)
		return err_set(e, EXIT_CTRUN, "GPU passthrough was requested (nv = true) but %s "
			       "has no NVIDIA GPU (no /dev/nvidia0 or /dev/nvidiactl)", t->host);
	s->gpus = strcmp(o->nv, "false") != 0 && present;
	if (!s->gpus)
		return 0;
	/* Node mode: all the task's GPUs; task mode: the one of its local rank. */
	if (gpu_pin_select(t, o->envp, &ids, e) < 0)
		return -1;
	c->gpu_ids[0] = '\0';
	for (size_t i = 0; i < ids.n; i++) {
		size_t n = strlen(c->gpu_ids);

		if (xsnprintf(c->gpu_ids + n, sizeof(c->gpu_ids) - n, "%s%s", i ? "," : "",
			      ids.v[i]) < 0) {
			strv_free(&ids);
			return err_set(e, EXIT_CTRUN, "GPU list too long");
		}
	}
	s->gpu_ids = ids.n > 0 ? c->gpu_ids : NULL;
	strv_free(&ids);
	/* [gpu] source: their CDI devices (the devices phase applies them, no
	 * hook, the driver's GPU phase not called), else ctrun-hook's way. */
	if (ctr_gpu_cdi(c, s->gpu_ids, &cdi, e) < 0)
		return -1;
	if (cdi) {
		s->gpus = false;
		return 0;
	}
	/* How the runtime passes them: the driver's. */
	return s->rt->gpus != NULL ? s->rt->gpus(s, o, e) : 0;
}
