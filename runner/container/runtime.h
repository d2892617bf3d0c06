/* runtime.h - choosing the runtime on this host, and writing, printing and
 * spawning an adapter's plan (runtime.c, overlay.c, worker_check.c).  The
 * adapters in rt/ only build plans; everything that touches the host is
 * here, one layer above them. */
#ifndef CTRUN_RUNTIME_H
#define CTRUN_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "rt.h"

/* Writes the plan's files (creating them, mode 0644). */
int ctr_plan_write(const struct ctr_plan *p, struct err *e);
/* --dry-run: each file's contents, then the command, shell-quoted. */
void ctr_plan_print(const struct ctr_spec *s, const struct ctr_plan *p);
/* Forks the runtime: in the child, the plan's environment on top of envp,
 * the overlay's namespaces (plan.ovl), then exec.  Returns the child's pid
 * once it has exec'd (a failure before is reported here, EXIT_CTRUN). */
pid_t ctr_plan_spawn(const struct ctr_spec *s, const struct ctr_plan *p, char *const *envp,
		     struct err *e);
/* overlay.c: in the runtime's child, the plan's namespaces and overlay. */
int overlay_enter(const struct ctr_spec *s, const struct ctr_plan *p, struct err *e);
/* overlay.c: an overlay of lower under upper (work its work directory) on
 * target, nodev and nosuid, named source (mountinfo's source field);
 * rootless: userxattr where the kernel has it. */
int ovl_mount(const char *lower, const char *upper, const char *work, const char *target,
	      const char *source, bool rootless, struct err *e);

/* worker_check.c: 0 when ctrun-worker (`worker`, on the host) can run in the
 * image whose root file system is the host directory `rootfs` (NULL: not
 * known, not checked); else EXIT_CTRUN: the image has no C library. */
int ctr_worker_check(const char *rootfs, const char *image, const char *worker, struct err *e);

#endif
