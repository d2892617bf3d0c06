/* named.h - named containers (--name NAME): a container's writable layer
 * kept on the node, per user, in the node cache, so a later step, job or
 * `ctrun shell` with the same name continues from it, and the locks that
 * let many runs use one at once.
 *
 * Layout under the cache root (cache.h; the user's own cache, 0700 and
 * checked by cache_root_check, never the node's shared one):
 *   containers/NAME/upper     the overlay's upper layer (the changes)
 *   containers/NAME/work      the overlay's work directory
 *   containers/NAME/merged    where its shared root is mounted, in that root's
 *                             own mount namespace only (empty on the host)
 *   containers/NAME/image     the record: the image's cache identity on the
 *                             first line, its path after it (for the messages)
 *   containers/NAME.ctrun-tmp.HOST.PID   one being made, or being removed
 *   locks/container-NAME.gate flock, exclusive: held only while a run joins or
 *                             makes the container's root, or leaves it, and
 *                             by remove, gc and list (never for a whole run)
 *   locks/container-NAME.lock flock: shared by every run using NAME, for the
 *                             whole run; exclusive by what needs it alone
 *                             (the first run, which mounts the root; --name-reset,
 *                             --save, `ctrun save`, remove, gc)
 *   locks/container-NAME.PID.sock  a run's door to the mounted root (PID: its
 *                             ctrun; runner/container/namedroot.h)
 * A container exists iff containers/NAME exists: it is made under a
 * temporary name and published by rename(2), so a crash never leaves a
 * half-made one that looks whole.  Its mtime (the record's) is its last use.
 *
 * Many runs at once, one overlay: two overlays on one upper directory at
 * once are undefined (the kernel's overlayfs documentation), so the first
 * run mounts the one overlay and the runs that come while any uses it
 * share that mount (namedroot.h); the users' lock says whether any run
 * uses it, and the gate makes "join it or mount it" one step, so two
 * first runs never both mount.  Every lock and door is in the user's own
 * 0700 cache: no other user can take, pre-create or connect to them. */
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
	char name[NAMED_NAME_MAX + 1];
	char dir[4096];     /* containers/NAME */
	char upper[4096];
	char work[4096];
	char merged[4096];  /* containers/NAME/merged */
	char locks[4096];   /* the cache's locks directory (the doors are there) */
	char tag[64];       /* the shared overlay's mount source, unique on the node:
			     * "ctrun-named:DEV:INO" of upper (namedroot.c finds
			     * a mount of it that outlived its run by it) */
	bool created;       /* made by this open (else continued) */
	bool exclusive;     /* lock_fd is held exclusively for the whole run */
	int lock_fd;        /* the users' lock; -1 = none */
	int gate_fd;        /* the gate, held from named_open to named_gate_release; -1 = none */
};

struct named_req {
	const struct cache_cfg *cfg; /* the user's own cache (not shared) */
	const char *name;
	const char *image;           /* the image, for the record and messages */
	const char *identity;        /* its cache identity (cache_identity) */
	bool reset;                  /* --name-reset: start anew from this image */
	/* The run needs NAME to itself (--name-reset, --save, `ctrun save`):
	 * refused while another run uses it, and others are refused while it
	 * runs.  reset implies it. */
	bool exclusive;
};

/* Takes NAME's gate (waiting for it: every holder holds it briefly), makes
 * NAME when missing (or when reset: the old one removed first, which needs
 * it unused), and checks that it was made from this image (refused
 * otherwise, EXIT_USAGE, saying so and how to start anew).  Touches its
 * last use.  Exclusive: the users' lock taken exclusively (refused, naming
 * a user, while any run uses NAME); else not yet taken: the caller joins
 * (named_share) or claims (named_claim) under the gate, then releases it. */
int named_open(const struct named_req *q, struct named *n, struct err *e);
/* No run uses NAME (the users' lock exclusively, waiting about 2 s for one
 * that is leaving): the caller may mount its root.  -1 naming a user. */
int named_claim(struct named *n, struct err *e);
/* The users' lock shared, for the whole run (after a claim, in its place).
 * -1 naming the user that has NAME to itself. */
int named_share(struct named *n, struct err *e);
/* Lets the next run of NAME join or claim it. */
void named_gate_release(struct named *n);
/* Takes the gate again (a run leaving NAME's shared root); -1 when it
 * cannot be opened. */
int named_gate_take(struct named *n);
/* Releases the users' lock and the gate. */
void named_close(struct named *n);

/* "container-NAME.PID.sock": the file name of a run's door into buf; -1
 * when it does not fit. */
int named_door_name(const char *name, long pid, char *buf, size_t size);
/* The PID of a door of NAME (a file name in the locks directory), -1 for
 * any other file (another name's door, a lock).  Pure. */
long named_door_pid(const char *file, const char *name);

/* The named containers of a cache, for `ctrun cache list`. */
struct named_entry {
	char name[NAMED_NAME_MAX + 1];
	char image[4096];
	unsigned long long bytes;    /* disk use of its directory */
	long long last_use;          /* seconds since the epoch */
	bool in_use;                 /* a run uses it now (or is starting with it) */
};
int named_list(const struct cache_cfg *c, struct named_entry **out, size_t *n, struct err *e);
/* Removes NAME (and the doors dead runs left); refused while a run uses
 * it.  0 with *found false when there is none. */
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
