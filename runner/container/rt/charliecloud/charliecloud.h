/* charliecloud.h - the Charliecloud driver (ch-run), see charliecloud.c. */
#ifndef CTRUN_CHARLIECLOUD_H
#define CTRUN_CHARLIECLOUD_H

#include "rt.h"

/* spec.own of a charliecloud run: the GPU driver's files that ctrun-hook
 * names (destinations in CTR_DRIVER_DIR), bound by name. */
struct ch_own {
	struct ctr_mounts driver;
};

/* ch-run over RUNDIR/rootfs, the OCI overlay of spec.rootfs (or of the
 * holder's rootfs_ns) with every mount staged (plan.ovl_stage). */
int rt_charliecloud_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);

#endif
