/* namedroot.h - one mounted root per named container, shared by every run
 * that uses it at once (`ctrun --name N` runs, the plugin's steps with
 * --container-name=N:no_exec), torn down when the last one leaves.
 *
 * The named container's overlay (lower: the image, upper: its kept layer,
 * images/cache/named.h) is mounted once, by the first run, in a mount namespace
 * of its own (and, rootless, a user namespace mapping the user to root):
 * the root's namespace, kept alive by descriptors, not by a process.  Each
 * run keeps a small server, its door (a unix socket in the user's 0700
 * cache, locks/container-N.PID.sock): it holds the root's namespaces and,
 * on a connection of the same user, hands them over (SCM_RIGHTS, as the
 * image holder does: holder.h); a run that comes while others run asks
 * any of their doors, starts a server of its own and so keeps the root
 * alive for those after it, whoever leaves first.  Its runtime gets a
 * copy of the root's mount (open_tree, made in the root's namespace by its
 * server) and attaches it in a mount namespace of its own copied from the
 * host's (move_mount): every run sees the same files through the one
 * overlay, with its own binds, environment and working directory.
 *
 * Whether to join or to mount is decided under the container's gate; a
 * run mounts only when no run holds the users' lock and no process of
 * the user still has an earlier mount of that overlay (a run whose ctrun
 * was killed: its processes may outlive it for a moment, found by their
 * mountinfo and waited for), so two overlays of one upper layer never
 * exist at once.  Linux >= 5.2 (open_tree, move_mount). */
#ifndef CTRUN_NAMEDROOT_H
#define CTRUN_NAMEDROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "cache/named.h"

struct named_root {
	pid_t server; /* this run's server (its door), a child; -1 = none */
	int ctl;      /* our end of the socket to it: closing it ends it; -1 = none */
	int tree;     /* the root's mount, a detached copy for our runtime to attach; -1 */
	int user;     /* the root's user namespace (rootless), -1 = none */
};

struct named_root_req {
	struct named *n;  /* opened, its gate held */
	const char *lower; /* the image's tree, where a new root's namespace sees it */
	int holder_mnt;   /* as root: the image holder's mount namespace, lower is
			   * there; -1 = the host's */
	bool rootless;
	uid_t uid;
	gid_t gid;
};

void named_root_init(struct named_root *r);
/* Under q->n's gate: joins the root another run of it has mounted, or
 * mounts it (no run uses it: named_claim), and starts this run's door;
 * then holds the users' lock shared (named_share).  r->tree and r->user
 * are for the runtime (ctr_spec's named_tree, named_user). */
int named_root_take(const struct named_root_req *q, struct named_root *r, struct err *e);
/* Under n's gate: ends this run's door and releases n's users' lock, so a
 * run that comes next finds either this door or no user. */
void named_root_leave(struct named *n, struct named_root *r);

/* A process of uid that has a mount whose source is tag (the shared
 * overlay's: named.h) in its mount namespace: its pid, else 0. */
pid_t named_root_lingering(const char *tag, uid_t uid);
/* Whether mountinfo text (len bytes) holds a mount whose source is tag.
 * Pure. */
bool named_mountinfo_has(const char *text, size_t len, const char *tag);

#endif
