/* apptainer.h - the apptainer and singularity drivers (apptainer.c): which
 * release a binary is (appversion.c), and their own state in a run. */
#ifndef CTRUN_APPTAINER_H
#define CTRUN_APPTAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "rt.h"

/* Which apptainer or singularity binary it is, from its `--version` line
 * ("apptainer version 1.3.4", "singularity-ce version 4.1.0",
 * "singularity version 3.4.2"): the adapter's arguments depend on it. */
enum app_flavor { APP_UNKNOWN, APP_APPTAINER, APP_SINGULARITYCE, APP_SINGULARITY };
struct app_version {
	enum app_flavor flavor;
	int major, minor, patch;
};
/* Parses the first line of `BIN --version`; an unknown text gives APP_UNKNOWN. */
void app_version_parse(const char *text, struct app_version *v);
/* Runs `bin --version` (no shell, 5 s at most) and parses its answer. */
void app_version_run(const char *bin, struct app_version *v);
/* "apptainer 1.3.4", "SingularityCE 4.1.0", "Singularity 3.4.2", "an unknown version". */
const char *app_version_name(const struct app_version *v, char *buf, size_t size);
/* --mount exists: apptainer >= 1.0.0, SingularityCE >= 3.9.0. */
bool app_has_mount(const struct app_version *v);
/* SingularityCE >= 4.0: `oci mode` in singularity.conf switches to its OCI
 * launcher unless --no-oci. */
bool app_has_no_oci(const struct app_version *v);

/* spec.own of an apptainer or singularity run. */
struct app_own {
	struct app_version app;   /* which release (probe) */
	bool subids;              /* the caller has /etc/subuid and /etc/subgid ranges
				   * (Singularity 3's --fakeroot needs them) */
	/* --gpu-isolation: only the container's GPUs' device nodes (--contain),
	 * the driver's files (destinations in CTR_DRIVER_DIR, from `ctrun-hook
	 * driver-files`) and the host's $HOME bound back ("" = none). */
	bool gpu_isolate;
	struct ctr_mounts driver;
	char home[4096];
};

/* apptainer/singularity flags, binds and worker variables for `gpus`:
 *   isolate = false  flag "--nv" (binds every GPU and the driver);
 *                    CUDA_VISIBLE_DEVICES=IDS pins the workers (host ids:
 *                    every GPU is visible in the container);
 *   isolate = true   flag "--contain" (a minimal /dev), a bind of
 *                    /dev/nvidiaN for each GPU and of the control nodes
 *                    present; CUDA_VISIBLE_DEVICES=0..n-1.  The driver's
 *                    files are the caller's (gpu_pin_driver_binds).
 * Appends to flags (before the image), binds (in order) and env (KEY=VALUE,
 * for the agent). */
int app_gpu_args(const struct strv *gpus, bool isolate, struct strv *flags,
		 struct ctr_mounts *binds, struct strv *env, struct err *e);

int rt_apptainer_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);

#endif
