/* pathwalk.h - the one walk of a path inside a root, component by
 * component, over a back end that holds the directories: a stack of
 * O_PATH descriptors (inroot.c, a root directory on disk) or of nodes of a
 * tree in memory (images/squash/mtree.c, a squashfs being written).
 *
 * The rules are here once: "." is skipped, ".." goes up (at the root it
 * stays there, or fails with EXDEV when `beneath`), a symlink's target
 * goes in front of what is left to walk (an absolute one restarts at the
 * root, or fails with EXDEV when `beneath`; any fails with ELOOP when
 * `no_links`), at most 40 links a path (ELOOP, as the kernel's), a name
 * over NAME_MAX or a path over PATH_MAX fails with ENAMETOOLONG, a file in
 * the way with ENOTDIR; components that do not exist are made (`create`),
 * kept as text (`missing_ok`), or fail.  The back end only answers what a
 * name in the current directory is, reads a link, makes a directory, and
 * moves its current directory. */
#ifndef CTRUN_PATHWALK_H
#define CTRUN_PATHWALK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct pathwalk_ops {
	/* What `name` in the current directory is: 0 with *type (its S_IFMT
	 * bits), the child held until enter, readlink or drop; -1 with errno
	 * (ENOENT: there is none). */
	int (*lookup)(void *be, const char *name, mode_t *type);
	/* The held child's link target into buf (NUL-terminated, fewer than
	 * size bytes), and the child dropped: 0, or -1 with errno. */
	int (*readlink)(void *be, char *buf, size_t size);
	/* Makes directory `name` in the current directory (create walks). */
	int (*mkdir)(void *be, const char *name, mode_t mode);
	/* The held child (a directory) becomes the current one: 0, or -1 with errno. */
	int (*enter)(void *be);
	void (*drop)(void *be);   /* the held child let go */
	void (*up)(void *be);     /* the current directory's parent becomes current */
	void (*to_root)(void *be);
};

struct pathwalk {
	const struct pathwalk_ops *ops;
	void *be;
	bool beneath;     /* an absolute link or a ".." above the root fails (EXDEV) */
	bool no_links;    /* any symlink fails (ELOOP) */
	bool follow_last; /* resolve a symlink in the last component too */
	bool create;      /* make missing directories (mode) */
	bool missing_ok;  /* keep missing components as text */
	mode_t mode;
	size_t depth;         /* directories entered below the root */
	size_t virt;          /* components in `shown` that do not exist (missing_ok) */
	int links;
	char shown[PATH_MAX]; /* the current directory as the container sees it ("" = /) */
	char link[PATH_MAX];  /* the last symlink followed, "/lib -> ../x", for messages */
	char todo[PATH_MAX * 2];
};

/* Walks `path` (relative to the root) to its last component: the back
 * end's current directory holds it, `leaf` gets its name ("" when the path
 * ends at a directory).  The caller has set ops, be and the flags, the
 * back end at its root.  0, or -1 with errno and (unless e is NULL) a
 * one-line reason in e (code EXIT_CTRUN). */
int pathwalk_run(struct pathwalk *w, const char *path, char *leaf, size_t leaf_size,
		 struct err *e);
/* After pathwalk_run: the path it resolved, relative to the root ("."
 * for the root itself), into out.  0, or -1 with ENAMETOOLONG and e. */
int pathwalk_result(const struct pathwalk *w, const char *leaf, char *out, size_t size,
		    struct err *e);

/* The walk's errors, for its callers' own steps too: e (unless NULL) gets
 * the line, errno gets err; -1. */
int pathwalk_fail(struct err *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "WHAT DIR/NAME in the image: strerror(errno)", errno kept; -1. */
int pathwalk_fail_sys(struct err *e, const char *what, const char *dir, const char *name);

#endif
