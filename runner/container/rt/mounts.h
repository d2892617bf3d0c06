/* mounts.h - bind mounts into containers: parsing `--mount SRC[:DST[:ro]]`,
 * checking the source, and resolving the destination inside the image.
 *
 * A destination is always resolved inside the image's root file system with
 * chroot semantics (an absolute symlink restarts at the image's root, ".."
 * stops there), and the runtime is handed the symlink-free result: an image
 * with `/mnt/evil -> /etc` can never redirect a mount, or a mount point ctrun
 * creates, onto the host. */
#ifndef CTRUN_MOUNTS_H
#define CTRUN_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* What a mount entry is: a bind of a host path (SRC[:DST[:OPTS]]), a
 * fresh tmpfs (tmpfs:DST[:OPTS], pyxis's `tmpfs:`), or the removal of the
 * mounts at DST that come before it (umount:DST, pyxis's `umount:`). */
enum ctr_mount_kind { CTR_MOUNT_BIND, CTR_MOUNT_TMPFS, CTR_MOUNT_UMOUNT };

struct ctr_mount {
	enum ctr_mount_kind kind;
	char *src;  /* absolute host path ("tmpfs", "umount" for those kinds) */
	char *dst;  /* absolute path inside the container */
	bool ro;
	bool file;  /* the source is not a directory: its mount point is a file */
	/* Binds are nosuid,nodev unless asked (":suid", ":dev"): a host tree
	 * another user can write must not hand a root run a setuid file. */
	bool suid;
	bool dev;
	/* ":unbindable" (pyxis's flag): no bind of it, nor of anything under
	 * it, can be made inside the container (MS_UNBINDABLE). */
	bool unbindable;
	/* tmpfs: its mount data, checked ("size=1g,mode=1777,huge=within_size";
	 * "" for none); NULL for the other kinds. */
	char *data;
};

struct ctr_mounts {
	struct ctr_mount *v;
	size_t n;
};

/* Parses SRC[:DST[:OPTS]], OPTS a comma-separated list of ro or rw, suid,
 * dev, unbindable ("\:" is a colon, "\\" a backslash, inside either
 * path).  A relative SRC is taken from `cwd`; both paths are normalised
 * lexically ("a//b/./c/.." -> "a/b"); DST defaults to SRC and must be
 * absolute.  The source "tmpfs" is a tmpfs (tmpfs:DST[:OPTS], OPTS ro or
 * rw, size=, nr_inodes=, mode=, huge=), "umount" a removal (umount:DST);
 * both need DST ("./tmpfs" is the directory).  No I/O. */
int mount_parse(const char *spec, const char *cwd, struct ctr_mount *out, struct err *e);

/* The source must exist (following symlinks, as the runtime will); records
 * whether it is a directory.  Nothing to check for a tmpfs or umount. */
int mount_check_source(struct ctr_mount *m, struct err *e);

/* Appends a copy (src and dst must be absolute), nosuid and nodev. */
int mounts_add(struct ctr_mounts *ms, const char *src, const char *dst, bool ro, bool file,
	       struct err *e);
/* Appends a copy of m, its options included. */
int mounts_add_copy(struct ctr_mounts *ms, const struct ctr_mount *m, struct err *e);
void mount_free(struct ctr_mount *m);
void mounts_free(struct ctr_mounts *ms);

/* Replaces m->dst by its resolution inside the root file system `rootfs`
 * (a host directory): symlinks followed inside the image only.  Refuses a
 * destination that resolves to the image's root itself. */
int mount_resolve_dest(const char *rootfs, struct ctr_mount *m, struct err *e);

/* Creates the mount point of a resolved destination under the directory
 * open as `rootfd` (directories, and an empty file when m->file), refusing
 * to pass through any symlink (inroot.h, INROOT_NO_LINKS), so nothing
 * outside rootfd is ever created. */
int mount_point_create(int rootfd, const struct ctr_mount *m, struct err *e);
/* Whether mount i needs no mount point in the image: it lies inside an
 * earlier directory bind (the host's /tmp, the working directory...) whose
 * source already holds it, so the runtime mounts it there. */
bool mount_point_provided(const struct ctr_mounts *ms, size_t i);

/* Applies every umount:DST entry of ms: the entries before it at DST or
 * below it are dropped, and so is the umount entry.  One that finds none
 * stays when `runtime_detach` (the runtime mounts things of its own that
 * it can detach: enroot's home, from its hook); otherwise it is refused
 * (EXIT_USAGE) naming `runtime`. */
int mounts_apply_umounts(struct ctr_mounts *ms, bool runtime_detach, const char *runtime,
			 struct err *e);

#endif
