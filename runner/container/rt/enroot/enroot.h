/* enroot.h - the enroot driver (enroot.c): its own state in a run. */
#ifndef CTRUN_ENROOT_H
#define CTRUN_ENROOT_H

#include "rt.h"

/* spec.own of an enroot run. */
struct enroot_own {
	/* With GPUs and no ctrun hook installed (enroothook.c): ctrun-hook is
	 * added for this run through a per-run ENROOT_CONFIG_PATH holding
	 * links to every entry of the user's own (config, NULL = none; its
	 * entries, hooks.d's as "hooks.d/NAME") and the hook script ("" =
	 * none). */
	char hook[4096];
	const char *config;
	char config_dir[4096];
	struct strv config_entries;
};

int rt_enroot_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);
/* enroot create --name NAME IMAGE, into ENROOT_DATA_PATH. */
int rt_enroot_create_argv(const char *bin, const char *image, const char *name,
			  struct strv *argv, struct err *e);
/* enroothook.c: the GPU phase (drivers.h gpus). */
int enroot_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);

#endif
