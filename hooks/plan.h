/* plan.h - what the hook puts into a container, checked whole before any
 * of it is done.
 *
 * Items are host files (GPU device nodes, driver libraries and tools, IPC
 * sockets, the driver's proc files) to bind at a path inside the
 * container, symlinks to make there (libcuda.so.1 ->
 * libcuda.so.535.104.05), and a tmpfs over a directory of the container
 * with files written into it (the masked /proc/driver/nvidia).  hook_plan_check walks
 * every destination first, so a hostile image is refused before anything
 * is created or mounted; hook_plan_apply then binds, and on any failure
 * unmounts what it mounted. */
#ifndef CTRUN_HOOK_PLAN_H
#define CTRUN_HOOK_PLAN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "rootfs.h"

enum hook_item_kind {
	HOOK_ITEM_DEV,  /* character device node, bound read-only, noexec */
	HOOK_ITEM_FILE, /* library or tool, bound read-only, nodev */
	HOOK_ITEM_IPC,  /* socket or pipe directory, bound read-write, noexec */
	HOOK_ITEM_LINK, /* symlink dst -> src (src is the link text) */
	HOOK_ITEM_PROC, /* a file or directory of the driver's procfs, bound read-only,
			 * nodev, noexec */
	HOOK_ITEM_TMPFS, /* a tmpfs (mode 0555, nodev, nosuid, noexec) over the
			  * directory dst, which must exist; src is "tmpfs" */
	HOOK_ITEM_DATA,  /* a new file dst with the bytes `data` (mode 0444), only
			  * inside a tmpfs planned before it */
};

struct hook_item {
	enum hook_item_kind kind;
	char *src;  /* host path, or the link text */
	char *dst;  /* path inside the container */
	int srcfd;  /* O_PATH of src (-1 for links) */
	bool isdir; /* src is a directory (IPC, PROC) */
	char *data; /* DATA: the file's bytes */
	size_t len;
	/* apply state, for rollback */
	int parentfd;
	int topfd;  /* the mounted file, -1 until mounted */
	bool created;
	char leaf[NAME_MAX + 1];
};

struct hook_plan {
	struct hook_item *v;
	size_t n, cap;
	bool verbose; /* one stderr line per item applied */
};

/* Adds an item; src is opened now (it must exist and be of the right type:
 * a character device for DEV, a regular file for FILE, a socket or
 * directory for IPC, a regular file or directory for PROC; TMPFS and DATA
 * open nothing).  An item whose dst is already planned is skipped. */
int hook_plan_add(struct hook_plan *p, enum hook_item_kind kind, const char *src,
		  const char *dst, struct err *e);
/* A DATA item: dst gets a copy of data[0..len-1]. */
int hook_plan_data(struct hook_plan *p, const char *dst, const char *data, size_t len,
		   struct err *e);
bool hook_plan_has(const struct hook_plan *p, const char *dst);
int hook_plan_check(struct hook_plan *p, const struct hook_root *r, struct err *e);
int hook_plan_apply(struct hook_plan *p, const struct hook_root *r, struct err *e);
void hook_plan_free(struct hook_plan *p);

#endif
