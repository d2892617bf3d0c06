/* gpus.c - which GPUs this ctrun's container gets (see container.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "util.h"

/* Host ids for the task's GPUs.  t->gpus follows CUDA_VISIBLE_DEVICES,
 * which Slurm numbers inside the step's device cgroup under
 * ConstrainDevices (0,1 for host GPUs 2,3): an entry that is not among
 * SLURM_STEP_GPUS but is a position in it marks that form, and each entry
 * is then mapped through the list (the rule ctrun-hook applies too). */
static int host_ids(const struct topo *t, char *const *envp, struct strv *out, struct err *e)
{
	const char *step = envp_get(envp, "SLURM_STEP_GPUS");
	struct strv sv = { 0 };
	bool relative = false, positions = true;
	int rv = -1;

	if (step != NULL && envp_get(envp, "CUDA_VISIBLE_DEVICES") != NULL) {
		for (const char *p = step; *p != '\0';) {
			size_t len = strcspn(p, ",");

			if (len > 0 && strv_pushn(&sv, p, len) < 0)
				goto nomem;
			p += len + (p[len] == ',');
		}
		for (size_t i = 0; i < t->gpus.n; i++) {
			long k;

			if (parse_long(t->gpus.v[i], 0, (long)sv.n - 1, &k) < 0)
				positions = false;
			else if (strv_find(&sv, t->gpus.v[i]) < 0)
				relative = true;
		}
	}
	for (size_t i = 0; i < t->gpus.n; i++) {
		const char *id = t->gpus.v[i];

		if (relative && positions)
			id = sv.v[strtol(id, NULL, 10)];
		if (strv_push(out, id) < 0)
			goto nomem;
	}
	rv = 0;
	goto out;
nomem:
	err_sys(e, EXIT_CTRUN, "gpus");
out:
	strv_free(&sv);
	return rv;
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
		long k = t->local_rank_base >= 0 ? t->local_rank_base : 0;

		if (strv_push(out, ids.v[(size_t)k % ids.n]) < 0) {
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
