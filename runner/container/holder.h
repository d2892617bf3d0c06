/* holder.h - the image holder: the image's squashfs mounted in a private
 * namespace of a child of ctrun, for the container to start from (see
 * holder.c). */
#ifndef CTRUN_HOLDER_H
#define CTRUN_HOLDER_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "kind.h"

struct img_holder {
	pid_t pid; /* -1 = none */
	int fd;    /* closing it ends the holder */
};

/* Forks the holder, which mounts image (a .sqsh, or a SIF's squashfs) on
 * dir (an empty directory) in a private mount namespace: a kernel mount
 * as root, squashfuse_ll in a user namespace mapping the caller to root
 * when rootless.  Returns once it is mounted; ctrun then sees it at
 * /proc/PID/root/DIR.  -1 with the holder's reason in e. */
int holder_start(struct img_holder *h, const char *image, enum image_kind kind, const char *dir,
		 bool rootless, struct err *e);
/* Ends the holder and waits for it (nothing when there is none). */
void holder_stop(struct img_holder *h);
/* In a child about to become the runtime: joins the holder's user (when
 * rootless) and mount namespaces. */
int holder_join(pid_t pid, bool rootless, struct err *e);

#endif
