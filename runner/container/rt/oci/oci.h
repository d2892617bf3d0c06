/* oci.h - the OCI drivers (oci, crun: oci.c): their own state in a run. */
#ifndef CTRUN_OCI_H
#define CTRUN_OCI_H

#include "gpu_pin.h"
#include "rt.h"

/* spec.own of an OCI run: how the container gets its GPUs (oci_gpus). */
struct oci_own {
	char hook[4096];           /* ctrun-hook, put into config.json; "" = none */
	struct ctr_devices devices; /* without the hook: every GPU node, passed as is */
};

/* The bundle over spec.rootfs (the overlay, ocins.c), run by spec.bin. */
int rt_oci_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);

#endif
