/* named.h - named containers (--name NAME): a container's writable layer
 * kept on the node, per user, in the node cache, so a later step, job or
 * `ctrun shell` with the same name continues from it.
 *
 * Layout under the cache root (cache.h; the user's own cache, 0700 and
 * checked by cache_root_check, never the node's shared one):
 *   containers/NAME/upper     the overlay's upper layer (the changes)
 *   containers/NAME/work      the overlay's work directory
 *   containers/NAME/image     the record: the image's cache identity on the
 *                             first line, its path after it (for the messages)
 *   containers/NAME.ctrun-tmp.HOST.PID   one being made, or being removed
 *   locks/container-NAME.lock flock held exclusively by the one run using NAME
 * A container exists iff containers/NAME exists: it is made under a
 * temporary name and published by rename(2), so a crash never leaves a
 * half-made one that looks whole.  Its mtime (the record's) is its last use.
 *
 * One run at a time: two overlays on one upper directory at once are
 * undefined (the kernel's overlayfs documentation), so the lock is taken
 * without waiting and a second run is refused, naming the holder. */
#ifndef CTRUN_NAMED_H
#define CTRUN_NAMED_H

#include <stdbool.h>
#include <stddef.h>

#include "cache.h"
#include "err.h"

/* Longest NAME (bytes). */
#define NAMED_NAME_MAX 64

/* A name is 1..NAMED_NAME_MAX of [A-Za-z0-9._-], not starting with '.' or
 * '-' (so never ".", "..", a hidden or temporary name, or an option).
 * Anything else: -1 with EXIT_USAGE naming why.  Pure. */
int named_check_name(const char *name, struct err *e);

/* The record's text, "IDENTITY\nIMAGE\n", into buf; -1 when it does not fit. */
int named_record_format(const char *identity, const char *image, char *buf, size_t size);
/* Parses a record of len bytes (any bytes; at most 8 KiB are ever read):
 * the identity (a cache id: [a-z0-9-]) and the image path.  Pure. */
int named_record_parse(const char *text, size_t len, char *identity, size_t isize, char *image,
		       size_t imsize, struct err *e);

struct named {
	char dir[4096];     /* containers/NAME */
	char upper[4096];
	char work[4096];
	bool created;       /* made by this open (else continued) */
	int lock_fd;        /* held until named_close; -1 = none */
};

struct named_req {
	const struct cache_cfg *cfg; /* the user's own cache (not shared) */
	const char *name;
	const char *image;           /* the image, for the record and messages */
	const char *identity;        /* its cache identity (cache_identity) */
	bool reset;                  /* --name-reset: start anew from this image */
};

/* Takes NAME for this run: locks it (refused when another run holds it),
 * makes it when missing (or when reset: the old one removed first), and
 * checks that it was made from this image (refused otherwise, EXIT_USAGE,
 * saying so and how to start anew).  Touches its last use. */
int named_open(const struct named_req *q, struct named *n, struct err *e);
/* Releases the lock. */
void named_close(struct named *n);

/* The named containers of a cache, for `ctrun cache list`. */
struct named_entry {
	char name[NAMED_NAME_MAX + 1];
	char image[4096];
	unsigned long long bytes;    /* disk use of its directory */
	long long last_use;          /* seconds since the epoch */
	bool in_use;                 /* a run holds its lock now */
};
int named_list(const struct cache_cfg *c, struct named_entry **out, size_t *n, struct err *e);
/* Removes NAME; refused while a run uses it.  0 with *found false when
 * there is none. */
int named_remove(const struct cache_cfg *c, const char *name, bool *found, struct err *e);

/* The image NAME was made from (its record): -1 with EXIT_USAGE when the
 * user has no container of that name on this node. */
int named_image(const struct cache_cfg *c, const char *name, char *image, size_t size,
		struct err *e);

/* `ctrun cache gc`: removes the named containers that can never be
 * continued, those whose image file is gone or changed since (its identity
 * differs: only --name-reset would use the name again); others hold a
 * user's work and stay (`ctrun cache remove NAME`).  In-use ones stay. */
int named_gc(const struct cache_cfg *c, size_t *removed, unsigned long long *freed,
	     struct err *e);

#endif
