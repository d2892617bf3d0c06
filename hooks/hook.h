/* hook.h - ctrun-hook's two modes, one file each.
 *
 *   hook_oci_run     OCI runtime hook (oci.c): state JSON on stdin, stage
 *                    createContainer (already in the container's mount
 *                    namespace, before pivot_root) or prestart /
 *                    createRuntime (in the runtime's: enter the container's).
 *   hook_enroot_run  enroot pre-start hook (enroot.c): ENROOT_ROOTFS,
 *                    ENROOT_ENVIRON and ENROOT_MOUNTS from the environment;
 *                    appends env lines and fstab lines for enroot to apply.
 * Both return 0, or -1 with e for main to print as one line.
 *
 * Folder hooks/: libhook (state and config JSON, GPU choice and inventory,
 * devices, driver libraries, the plan of binds) and ctrun-hook's main.c.
 * May use: core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_HOOK_H
#define CTRUN_HOOK_H

#include <stdbool.h>

#include "err.h"

int hook_oci_run(const char *stage, bool verbose, struct err *e);
int hook_enroot_run(char *const *envp, const char *want, const char *imex, bool verbose,
		    struct err *e);

#endif
