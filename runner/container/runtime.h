/* runtime.h - choosing the runtime on this host, and writing, printing and
 * spawning an adapter's plan (runtime.c, ocins.c, worker_check.c).  The
 * adapters in rt/ only build plans; everything that touches the host is
 * here, one layer above them. */
#ifndef CTRUN_RUNTIME_H
#define CTRUN_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "rt.h"

/* Runs `bin --version` (no shell, 5 s at most) and parses its answer. */
void ctr_app_version(const char *bin, struct app_version *v);

/* enrootcfg.c: ctr_pick.adds for --runtime auto (arg: the environment):
 * whether enroot (binary bin), as configured on this node, adds to a
 * container something ctrun's own start does not (why: what). */
bool ctr_enroot_adds(const struct ctr_driver *d, const char *bin, void *arg, char *why,
		     size_t size);

/* Writes the plan's files (creating them, mode 0644). */
int ctr_plan_write(const struct ctr_plan *p, struct err *e);
/* --dry-run: each file's contents, then the command, shell-quoted. */
void ctr_plan_print(const struct ctr_spec *s, const struct ctr_plan *p);
/* Forks the runtime: in the child, the plan's environment on top of envp,
 * the OCI namespace/overlay set-up, then exec.  Returns the child's pid
 * once it has exec'd (a failure before is reported here, EXIT_CTRUN). */
pid_t ctr_plan_spawn(const struct ctr_spec *s, const struct ctr_plan *p, char *const *envp,
		     struct err *e);
/* ocins.c: in the runtime's child, the plan's namespaces and overlay. */
int ocins_enter(const struct ctr_spec *s, const struct ctr_plan *p, struct err *e);

/* worker_check.c: 0 when ctrun-worker (`worker`, on the host) can run in the
 * image whose root file system is the host directory `rootfs` (NULL: not
 * known, not checked); else EXIT_CTRUN: the image has no C library. */
int ctr_worker_check(const char *rootfs, const char *image, const char *worker, struct err *e);

#endif
