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

struct json_object;

/* Edits an OCI config.json (json-c object) so ctrun-hook gives the
 * container exactly `gpus`:
 *   annotations  org.ctrun.enabled=true, org.ctrun.gpus=IDS, and with imex
 *                org.ctrun.imex-channels=IMEX
 *   hooks        createContainer += {hook_path, ["ctrun-hook", "createContainer"],
 *                env: ["PATH=" ctrun's PATH]}
 *   process.env  CUDA_VISIBLE_DEVICES=0..n-1 (the container's numbering;
 *                the hook cannot change the environment once runc has it),
 *                a MIG device by its UUID, NVIDIA_VISIBLE_DEVICES=IDS (the
 *                host's, as nvidia-docker)
 *   linux.resources.devices  allow c 195:N, 195:255 (nvidiactl), 195:254
 *                and the nvidia-uvm major (with MIG devices nvidia-caps's,
 *                with imex nvidia-caps-imex-channels'), so a device cgroup
 *                lets the bound nodes open.
 * Idempotent (a second call replaces, never duplicates).  With no GPUs it
 * changes nothing. */
int oci_gpu_config(struct json_object *config, const struct strv *gpus, const char *hook_path,
		   const char *imex, struct err *e);

/* Reads BUNDLE/config.json, applies oci_gpu_config, writes it back
 * (through a temporary file and rename). */
int oci_gpu_bundle(const char *bundle, const struct strv *gpus, const char *hook_path,
		   const char *imex, struct err *e);

/* ociedits.c: spec.edits (edits.h) into config.json. */
int oci_edits_config(struct json_object *config, const struct ctr_spec *s, struct err *e);

/* The bundle over spec.rootfs (the overlay, overlay.c), run by spec.bin. */
int rt_oci_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);

/* ocihook.c: the install phase (drivers.h hookfile, hooks_install.h):
 * `ctrun hooks install oci` writes OCI_HOOK_FILE, a containers/common
 * hooks.d JSON, into --dir or OCI_HOOKS_SYSTEM_DIR (podman, CRI-O). */
#define OCI_HOOK_FILE "ctrun-hook.json"
#define OCI_HOOKS_SYSTEM_DIR "/usr/share/containers/oci/hooks.d"
extern const struct ctr_hookfile oci_hookfile;

#endif
