/* edits.h - what a container needs from the host, beyond its image and
 * the user's --mount: device nodes, mounts, environment, hooks and
 * additional groups.  The one place where such edits are described
 * (struct ctr_edits, spec.edits) and checked per runtime; each driver's
 * plan applies them its own way, and a runtime that cannot apply one
 * refuses the run in one line naming the edit and who asked for it, before
 * anything starts: never a device given in part.
 *
 * Who fills it: CDI devices (--device vendor.com/class=name, the GPUs of
 * `[gpu] source = cdi`: runner/container/devices.c); later, the fabric's
 * devices and libraries (issue 42).  Each entry names where it came from
 * (`from`: "vendor.com/class=name").
 *
 * How each runtime applies them (what `can` says, ctr_edits_can):
 *   OCI, root   config.json: linux.devices (made by the runtime: type,
 *               numbers, mode, owner as asked) and their device-cgroup rules
 *               (linux.resources.devices, the node's access), mounts of any
 *               type with their options, hooks at their OCI stage,
 *               process.user.additionalGids
 *   OCI, rootless  the same, but a device node is the host's node bound
 *               (no mknod in a user namespace) and no additional group (the
 *               user namespace maps only the caller's)
 *   enroot      binds and file systems through its fstab (options as
 *               given), the host's nodes bound (no device cgroup); no hooks,
 *               no groups
 *   apptainer, singularity, charliecloud  binds only (ro or rw), the
 *               host's nodes bound; no other file system, no hooks, no
 *               groups
 * The environment goes to the workers under every runtime (the agent's
 * runtime layer, docs/containers.md), the driver's own variables over it.
 * A bound node is the host's: the runtime cannot give it another type,
 * numbers, mode or owner than the host's node has, nor narrow its access
 * without a device cgroup; asked for, that is refused. */
#ifndef CTRUN_EDITS_H
#define CTRUN_EDITS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "mounts.h"
#include "strv.h"

struct ctr_spec;

/* A device node in the container. */
struct ctr_edit_node {
	char *path;        /* in the container */
	char *host;        /* the host's node, bound where a runtime cannot make one */
	char type;         /* 'b', 'c' or 'p' */
	unsigned major, minor;
	unsigned mode;     /* permission bits of the node made */
	uid_t uid;
	gid_t gid;
	char access[4];    /* the device cgroup's: "rwm", "r", ...; "" none */
	bool mode_asked, uid_asked, gid_asked; /* set by who asked, not the host's */
	/* The host node: it exists and is this node (type, numbers), with
	 * its mode and owner (what a bind gives). */
	bool host_same;
	unsigned host_mode;
	uid_t host_uid;
	gid_t host_gid;
	size_t from;       /* index in ctr_edits.from */
};

/* A mount: a bind (type "bind", or the option bind/rbind) or a file system. */
struct ctr_edit_mount {
	char *src, *dst;
	char *type;        /* "bind", "tmpfs", ... */
	struct strv opts;  /* as asked, in order */
	bool bind;
	size_t from;
};

/* The OCI hook stages (cdispec.h's order). */
enum ctr_hook_stage { CTR_HOOK_PRESTART, CTR_HOOK_CREATE_RUNTIME, CTR_HOOK_CREATE_CONTAINER,
		      CTR_HOOK_START_CONTAINER, CTR_HOOK_POSTSTART, CTR_HOOK_POSTSTOP,
		      CTR_HOOK_STAGES };
extern const char *const ctr_hook_stage_names[CTR_HOOK_STAGES];

struct ctr_edit_hook {
	enum ctr_hook_stage stage;
	char *path;        /* absolute, an executable file (checked when added) */
	struct strv args, env;
	long timeout;      /* seconds, 0 none */
	size_t from;
};

struct ctr_edits {
	struct strv env;   /* K=V, later ones win */
	struct ctr_edit_node *nodes;
	size_t nnodes;
	struct ctr_edit_mount *mounts;
	size_t nmounts;
	struct ctr_edit_hook *hooks;
	size_t nhooks;
	gid_t *gids;
	size_t ngids;
	size_t gids_from;
	struct strv from;  /* who asked: "vendor.com/class=name", ... */
	/* The container's GPUs come from these edits (CDI): numbered 0..n-1
	 * inside, as ctrun-hook numbers them (plan.gpus_renumbered). */
	bool gpus_renumbered;
};

/* What a runtime can apply (ctr_driver.edits, less what rootless loses). */
enum {
	CTR_EDIT_NODES_MADE = 1,  /* it makes device nodes and has a device cgroup */
	CTR_EDIT_FS = 2,          /* mounts of any file system, with any option */
	CTR_EDIT_HOOKS = 4,       /* OCI hooks at their stages */
	CTR_EDIT_GIDS = 8,        /* additional groups of the process */
	CTR_EDIT_MOUNT_OPTS = 16, /* binds with any option, as asked (else ctr_edit_bind_opt):
				   * the runtime's own config carries them (OCI); a runtime
				   * without it gets its binds in spec.mounts (ctr_edits_binds) */
	CTR_EDIT_DEV_BINDS = 32,  /* its binds honour ctr_mount.dev (a node bound without
				   * nodev); without: the runtime decides (apptainer) */
	CTR_EDIT_HOST_DEV = 64,   /* it shares the host's /dev (ch-run): a node under /dev
				   * can only be the host's own at its own path */
};

bool ctr_edits_empty(const struct ctr_edits *d);
void ctr_edits_free(struct ctr_edits *d);

/* What spec's runtime can apply of its edits (the driver's bits; rootless
 * OCI loses the nodes made and the groups). */
unsigned ctr_edits_can(const struct ctr_spec *s);

/* Pure: every edit of s that its runtime cannot apply refused, one line
 * (EXIT_USAGE) naming the runtime, the edit, who asked and the way out. */
int ctr_edits_check(const struct ctr_spec *s, struct err *e);

/* The edits a bind runtime applies as binds: each device node as the
 * host's node bound at its path (dev: without nodev, for a runtime that
 * honours ctr_mount.dev), each bind mount with ro when asked; appended to
 * out.  File-system mounts are the caller's (CTR_EDIT_FS) and skipped. */
int ctr_edits_binds(const struct ctr_edits *d, bool dev, struct ctr_mounts *out,
		    struct err *e);

/* Whether a mount option is one a bind of every runtime expresses (ro,
 * rw, bind, rbind, nosuid, nodev, and the propagation ones, which every
 * runtime's binds have as private or slave already). */
bool ctr_edit_bind_opt(const char *opt);

#endif
