/* sprunning.h - the running containers of a node, per user, so that a step
 * can join one another step holds (pyxis's --container-name NAME of a
 * running container, and NAME "JOB.STEP" for an unnamed one).
 *
 * One file per running container, root's, in a directory only root can
 * read or write, made and read by slurmstepd with its own privileges
 * (the plugin raises them for these calls in user_init, where slurmstepd
 * runs as the job's user):
 *
 *   /run/ctrun-spank/              root's, 0755 (/run itself never changed)
 *   /run/ctrun-spank/HOST/         root's, 0755
 *   /run/ctrun-spank/HOST/UID/     root's, 0700
 *   /run/ctrun-spank/HOST/UID/NAME root's, 0600, flock'ed by the slurmstepd
 *                                  of the step holding it, for as long as
 *                                  the hold lives (locked before it has a
 *                                  name: O_TMPFILE, then linked)
 *
 * holding the holding agent's pid and start time, its working directory
 * and the container's changes to the environment (spenv.h):
 *
 *   "ctrun-spank-reg 1 PID STARTTIME\n" CWD "\0" SET... "\0" "\0" UNSET... "\0" "\0"
 *
 * A file whose lock nobody holds is left from a step that died: not
 * running, and removed by the node's next step (sp_running_prepare) or the
 * next publish in that directory.  A job user can write nothing here: a
 * record is at most SP_RUNNING_MAX bytes and a user has at most SP_RUNNING_RECORDS
 * at once on a node; beyond that a container runs but cannot be joined by
 * name (said in one line).  A directory of another layout (an earlier
 * ctrun's: the user's own) is emptied and made anew. */
#ifndef CTRUN_SPRUNNING_H
#define CTRUN_SPRUNNING_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "strv.h"

struct sp_running {
	long pid;
	unsigned long long start;  /* /proc/PID/stat's starttime */
	char *cwd;
	struct strv set, unset;
};

#define SP_RUNNING_MAX (1u << 20)  /* bytes of a record */
#define SP_RUNNING_RECORDS 64u     /* running containers of a user on a node */

/* The user's directory on this node: "/run/ctrun-spank/HOST/UID". */
int sp_running_dir(uid_t uid, char *out, size_t size, struct err *e);
/* As root: makes it (and its parents) as above, and removes the node's
 * stale records, every user's. */
int sp_running_prepare(uid_t uid, struct err *e);

/* As root: publishes NAME for the hold r (pid, cwd, changes); returns the
 * locked descriptor to keep (closing it, or the step's end, unpublishes),
 * -1 with e.  A NAME another live hold has published is refused. */
int sp_running_publish(uid_t uid, const char *name, const struct sp_running *r, struct err *e);
/* As root: removes NAME (when it is still the file of fd) and closes fd. */
void sp_running_unpublish(uid_t uid, const char *name, int fd);

/* As root: 1 with r filled when NAME runs (its lock held, its process the
 * one published), 0 when it does not, -1 with e on a bad file. */
int sp_running_lookup(uid_t uid, const char *name, struct sp_running *r, struct err *e);
/* The start time of process pid (/proc/PID/stat), 0 when gone. */
unsigned long long sp_running_starttime(long pid);

/* Tests: dir in place of /run. */
void sp_running_use_parent(const char *dir);

/* Pure: the file's bytes from r, and r from them. */
char *sp_running_format(const struct sp_running *r, size_t *len);
int sp_running_parse(const char *buf, size_t len, struct sp_running *r, struct err *e);
void sp_running_free(struct sp_running *r);

#endif
