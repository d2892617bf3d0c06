/* holder.h - the image holder: the image's squashfs mounted in a private
 * namespace of a child of ctrun, for the container to start from (see
 * holder.c). */
#ifndef CTRUN_HOLDER_H
#define CTRUN_HOLDER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

#include "err.h"
#include "kind.h"

struct img_holder {
	pid_t pid;   /* our child, the holder; -1 = none (or attached: not ours) */
	int fd;      /* closing it ends the holder (or, attached, leaves it); -1 = none */
	/* The holder's mounted image directory (O_PATH), mount and, rootless,
	 * user namespaces, as descriptors (holderwire.c); -1 = none. */
	int root, mnt, user;
	bool client; /* attached to another ctrun's holder: not our child */
};

/* Every member "none". */
void holder_init(struct img_holder *h);

/* What a holder mounts, and where. */
struct holder_req {
	const char *image;   /* a .sqsh, or a SIF (its squashfs) */
	enum image_kind kind;
	const char *dir;     /* an empty directory to mount on */
	bool rootless;
	const char *share;   /* holder_share: the rendezvous, NULL = none */
};

/* Forks the holder, which mounts q->image on q->dir in a private mount
 * namespace: a kernel mount as root, squashfuse_ll in a user namespace
 * mapping the caller to root when rootless.  Returns once it is mounted;
 * ctrun then sees it at /proc/self/fd/ROOT (h->root).  -1 with the
 * holder's reason in e. */
int holder_start(struct img_holder *h, const struct holder_req *q, struct err *e);
/* The same, shared by the ctruns of one step on one node (task mode: one
 * mount per node, not per task).  q->share names the rendezvous: SHARE.lock
 * (flock) and SHARE.sock (a unix socket the holder serves).  The first
 * ctrun starts the holder and serves as above; the others connect, get
 * the holder's descriptors and the directory it mounted on (into dir_out), and
 * stay connected while they use it.  A holder ends when its starter is
 * done and no client is connected, so the mount outlives no task that
 * uses it; a starter's holder_stop waits for that.  Falls back to a holder
 * of our own when the share cannot be set up. */
int holder_share(struct img_holder *h, const struct holder_req *q, char *dir_out, size_t size,
		 struct err *e);
/* Ends the holder (or leaves it), waits for our own, closes its descriptors. */
void holder_stop(struct img_holder *h);
/* In a child about to become the runtime: joins the holder's user (when
 * user >= 0) and mount namespaces, from its descriptors. */
int holder_join(int mnt, int user, struct err *e);

/* holderwire.c: the holder's message "DIR\n" with its descriptors
 * (root, mnt[, user]; SCM_RIGHTS) on a SOCK_SEQPACKET socket. */
#define HOLDER_MSG_FDS 3
int holder_msg_send(int sock, const char *dir, const int *fds, size_t nfds);
/* Receives it into h->root, h->mnt, h->user (rootless) and text (DIR).
 * -1 for anything else, a message without exactly those descriptors (a
 * bare pid) included; text then holds what came, for an error message. */
int holder_msg_recv(int sock, bool rootless, struct img_holder *h, char *text, size_t size);
/* The share's lock SHARE.lock, taken (or -1, errno EWOULDBLOCK when busy
 * and !wait).  The file may be removed by whoever holds it: a lock is
 * returned only once the path still names the file locked. */
int holder_share_lock(const char *path, bool wait);
int holder_share_paths(const char *share, struct sockaddr_un *sa, char *lock, size_t size);
/* Removes SHARE.lock and SHARE.sock when no holder is there any more (the
 * lock is free and nobody listens: a kill -9 of its starter).  true when
 * it did. */
bool holder_share_gc(const char *share);

#endif
