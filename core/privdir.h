/* privdir.h - a directory of the caller's that no one else can change:
 * the node cache's root, ctrun's run directories.
 *
 * Both usually sit in a shared /tmp, where another user can create the
 * name first (a directory of theirs, or a symlink to one) and so hand
 * ctrun a prepared image or read its workers' environment.  This is the one
 * check for both, so the rules cannot drift apart. */
#ifndef CTRUN_PRIVDIR_H
#define CTRUN_PRIVDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"

enum {
	PRIVDIR_PARENTS = 1,    /* create missing parents too (mkdir -p, mode 0700) */
	PRIVDIR_UNREADABLE = 2, /* no one else may read or enter it either (mode & 077 == 0);
				 * without it, only writing is refused (mode & 022 == 0) */
};

/* Creates `path` (mode 0700) if it is missing, then checks that it is a
 * directory owned by the caller (euid) with no write (or, with
 * PRIVDIR_UNREADABLE, no access) for group and others.  A symlink is
 * followed only when the caller owns the link itself (a link another user
 * put in /tmp is refused, as fs.protected_symlinks would).  -1 with e
 * (EXIT_CTRUN) naming the path and the rule it breaks. */
int privdir_make(const char *path, unsigned flags, struct err *e);

/* parent/name (e.g. /tmp/ctrun-cache-1000) made private as with
 * PRIVDIR_UNREADABLE; when another user took that name first, which in a
 * shared /tmp anyone can, the run does not fail: the caller's own
 * parent/name.XXXXXX is used instead (the one found again by later runs,
 * else a new one from mkdtemp), and one line on stderr says why. */
int privdir_default(const char *parent, const char *name, char *out, size_t size,
		    struct err *e);

/* Whom the caller trusts to have made, or to be able to change, a file or
 * directory it is about to use: itself, root (unless `root` is false), and,
 * in a group's image store, the members of that group.  The node's shared
 * cache trusts root alone ({ 0, true, TRUST_NO_GROUP }), a user's image
 * store the user and root, a group store its members too. */
#define TRUST_NO_GROUP ((gid_t)-1)
struct trust {
	uid_t me;    /* the caller (euid) */
	bool root;   /* root's are trusted too */
	gid_t group; /* a group whose members may write; TRUST_NO_GROUP: none */
};

/* Pure: 0 when st (an lstat) is a directory (want_dir) or a regular file
 * that only t's trusted users can have made or can change: owned by t->me
 * or root (or, with a group, by anyone: only members could make it in a
 * directory only members can write), writable by no other user, and by
 * group only when it is t->group.  Else -1 and why, a phrase for a message
 * ("not a directory", "a symlink", "not owned by root", "owned by uid 1001,
 * neither yours (uid 1000) nor root's", "writable by group or others",
 * "writable by others", "writable by group 100"). */
int trust_check(const struct stat *st, bool want_dir, const struct trust *t, char *why,
		size_t size);

#endif
