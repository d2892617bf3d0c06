/* idfiles.h - the container's /etc/passwd and /etc/group with the caller in
 * them, so that `id`, `whoami` and getpwuid(3) name the user a run is
 * (docs/containers.md "Identity and home").
 *
 * Pure functions, as enroot's hooks/10-shadow.sh and apptainer's generated
 * passwd do it: the caller's entry first, then the image's lines without
 * any other entry for the same name or id (ours wins, as enroot's pwck
 * keeps the first).  The image's file is data from an untrusted image: it
 * is bounded by the caller (IDFILES_MAX), any line is copied as it is but
 * a line holding NUL is dropped, and the last one gets its newline.  The
 * caller's fields come from the host's passwd database; one with ':' or a
 * newline would add a line or a field: refused. */
#ifndef CTRUN_IDFILES_H
#define CTRUN_IDFILES_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* The most of an image's /etc/passwd or /etc/group ctrun reads. */
#define IDFILES_MAX (4u << 20)

struct idfiles_user {
	const char *name;
	uid_t uid;
	gid_t gid;
	const char *gecos; /* NULL = "" */
	const char *home;
	const char *shell;
	const char *group; /* the name of gid */
};

/* The new passwd: the user's entry, then `image` (len bytes; NULL = the
 * image has none: a root entry is added then).  *out is malloc'd text. */
int idfiles_passwd(const struct idfiles_user *u, const char *image, size_t len, char **out,
		   size_t *out_len, struct err *e);
/* The new group: the user's group (name, gid), then `image`'s other lines. */
int idfiles_group(const struct idfiles_user *u, const char *image, size_t len, char **out,
		  size_t *out_len, struct err *e);

#endif
