/* holder.h - the image holder: the image's squashfs mounted in a private
 * namespace of a child of ctrun, for the container to start from (see
 * holder.c). */
#ifndef CTRUN_HOLDER_H
#define CTRUN_HOLDER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "kind.h"

struct img_holder {
	pid_t pid;   /* -1 = none */
	int fd;      /* closing it ends the holder (or, attached, leaves it) */
	bool client; /* attached to another ctrun's holder: not our child */
};

/* Forks the holder, which mounts image (a .sqsh, or a SIF's squashfs) on
 * dir (an empty directory) in a private mount namespace: a kernel mount
 * as root, squashfuse_ll in a user namespace mapping the caller to root
 * when rootless.  Returns once it is mounted; ctrun then sees it at
 * /proc/PID/root/DIR.  -1 with the holder's reason in e. */
int holder_start(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, struct err *e);
/* The same, shared by the ctruns of one step on one node (task mode: one
 * mount per node, not per task).  `share` names the rendezvous: SHARE.lock
 * (flock) and SHARE.sock (a unix socket the holder serves).  The first
 * ctrun starts the holder and serves as above; the others connect, learn
 * the holder's pid and the directory it mounted on (into dir_out), and
 * stay connected while they use it.  A holder ends when its starter is
 * done and no client is connected, so the mount outlives no task that
 * uses it; a starter's holder_stop waits for that.  Falls back to a holder
 * of our own when the share cannot be set up (*shared false). */
int holder_share(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, const char *share, char *dir_out, size_t size, struct err *e);
/* Ends the holder and waits for it (nothing when there is none). */
void holder_stop(struct img_holder *h);
/* In a child about to become the runtime: joins the holder's user (when
 * rootless) and mount namespaces. */
int holder_join(pid_t pid, bool rootless, struct err *e);

#endif
