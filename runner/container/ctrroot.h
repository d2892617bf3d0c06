/* ctrroot.h - the container's root file system on this node: the one
 * decision (ctr_root_decide, pure: facts in, choice out, so every runtime
 * need x image kind x --image-mode x user is unit tested without a
 * cluster) and its one result (struct ctr_root).  imgsource.c gathers the
 * facts and acts on the choice. */
#ifndef CTRUN_CTRROOT_H
#define CTRUN_CTRROOT_H

#include <stdbool.h>

#include "err.h"
#include "holder.h"
#include "kind.h"
#include "rt.h"

/* What the root file system is. */
enum ctr_root_kind {
	ROOTFS_NONE,        /* the runtime reads the image file itself (apptainer) */
	ROOTFS_DIR,         /* the image directory, used as it is */
	ROOTFS_CACHE,       /* the node cache's unpacked entry */
	ROOTFS_HOLDER,      /* the squashfs or SIF mounted by the image holder */
	ROOTFS_PLACEHOLDER, /* --dry-run: the text of what a run would create */
};

/* What the decision reads: the runtime only through its need. */
struct ctr_root_facts {
	enum ctr_root_need need;
	enum image_kind kind;
	enum ctr_image_mode mode;
	bool dry_run;
	bool task_share;    /* task mode in a step: the node's tasks share one holder */
	bool root;          /* euid 0: a kernel mount; else squashfuse_ll in a user namespace */
	bool cached;        /* the node cache's unpacked entry is there already */
	bool named;         /* --name: the root of a named container, which runs share
			     * (namedroot.h) and which may outlive this run */
	/* Why this host cannot, NULL = it can: mount a squashfs as root (kernel,
	 * loop devices), as a user (squashfuse_ll, /dev/fuse). */
	const char *no_kernel_mount, *no_fuse_mount;
	const char *image;  /* for the messages only */
};

struct ctr_root_choice {
	enum ctr_root_kind kind;  /* never ROOTFS_PLACEHOLDER: see placeholder */
	bool placeholder;         /* --dry-run where a run would unpack or mount */
	bool share;               /* ROOTFS_HOLDER: the node's shared holder */
	/* Why an image that could be started unpacked is unpacked (-v says
	 * it), NULL = nothing to say. */
	const char *why_unpacked;
};

/* The decision.  -1 with e when --image-mode mount cannot be honoured. */
int ctr_root_decide(const struct ctr_root_facts *f, struct ctr_root_choice *c, struct err *e);

/* The result: the root file system, and what to clean (the holder). */
struct ctr_root {
	enum ctr_root_kind kind;
	char path[4096];        /* the tree as ctrun sees it (/proc/self/fd/N for the
				 * holder's), the placeholder's text, "" = none */
	bool real;              /* path is a directory ctrun can read */
	char path_ns[4096];     /* ROOTFS_HOLDER: where the holder mounted it, in its namespace */
	struct img_holder holder; /* ROOTFS_HOLDER: pid and fds -1 = none */
};

void ctr_root_init(struct ctr_root *r);
/* Stops (or leaves) the holder; r is ctr_root_init'ed again. */
void ctr_root_free(struct ctr_root *r);
/* The spec's root fields (rootfs, holder) from r. */
void ctr_root_spec(const struct ctr_root *r, struct ctr_spec *s);

#endif
