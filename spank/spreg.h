/* spreg.h - the running containers of a node, per user, so that a step
 * can join one another step holds (pyxis's --container-name NAME of a
 * running container, and NAME "JOB.STEP" for an unnamed one).
 *
 * One file per running container in a directory of the user's on this
 * node, made by slurmstepd as root (spank_init_post_opt):
 *
 *   /run/ctrun-spank/HOST/UID/NAME    written by the starting step's
 *                                     slurmstepd (as the user), flock'ed by
 *                                     it for as long as the hold lives
 *
 * holding the holding agent's pid and start time, its working directory
 * and the container's changes to the environment (spenv.h):
 *
 *   "ctrun-spank-reg 1 PID STARTTIME\n" CWD "\0" SET... "\0" "\0" UNSET... "\0" "\0"
 *
 * A file whose lock nobody holds is left from a step that died: not
 * running.  The file is opened without following links or blocking, and
 * must be a regular file of the user's. */
#ifndef CTRUN_SPREG_H
#define CTRUN_SPREG_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "strv.h"

struct sp_reg {
	long pid;
	unsigned long long start;  /* /proc/PID/stat's starttime */
	char *cwd;
	struct strv set, unset;
};

/* The user's directory on this node: "/run/ctrun-spank/HOST/UID". */
int sp_reg_dir(uid_t uid, char *out, size_t size, struct err *e);
/* Makes it (root: owned by the user, 0700; its parents root's, 0755). */
int sp_reg_prepare(uid_t uid, gid_t gid, struct err *e);

/* Publishes NAME for the hold r (pid, cwd, changes); returns the locked
 * descriptor to keep (closing it, or the step's end, unpublishes), -1 with
 * e.  A NAME another live hold has published is refused. */
int sp_reg_publish(const char *dir, const char *name, const struct sp_reg *r, struct err *e);
/* Removes NAME and closes fd (from sp_reg_publish). */
void sp_reg_unpublish(const char *dir, const char *name, int fd);

/* 1 with r filled when NAME runs (its lock held, its process the one
 * published), 0 when it does not, -1 with e on a bad file. */
int sp_reg_lookup(const char *dir, const char *name, uid_t uid, struct sp_reg *r, struct err *e);
/* The start time of process pid (/proc/PID/stat), 0 when gone. */
unsigned long long sp_reg_starttime(long pid);

/* Pure: the file's bytes from r, and r from them. */
char *sp_reg_format(const struct sp_reg *r, size_t *len);
int sp_reg_parse(const char *buf, size_t len, struct sp_reg *r, struct err *e);
void sp_reg_free(struct sp_reg *r);

#endif
