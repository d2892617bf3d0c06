/* assemble.h - an image's blobs downloaded and streamed, as they arrive,
 * into one squashfs in the store (pull.c's last step, once the manifest is
 * resolved and the image claimed). */
#ifndef CTRUN_ASSEMBLE_H
#define CTRUN_ASSEMBLE_H

#include "err.h"
#include "manifest.h"
#include "registry.h"
#include "session.h"

struct assembly {
	struct session *s;
	const struct registry_cfg *c;
	const char *store;
	const struct manifest *m; /* the image manifest */
	const char *ref;          /* the reference, for messages */
	const char *sqsh;         /* where the image is published */
};

/* Downloads and streams the layers into a squashfs in a folder of its own
 * under the store's tmp/ (0700: nothing another member of a group's store
 * can reach or plant) and publishes it at a->sqsh by rename, with the
 * record of its layers for reuse (reuse.h).  Layers a stored image holds
 * already are taken from it (reuse_begin), not downloaded.  -1 with e
 * (a download's failure before what it made fail); nothing left in tmp/. */
int assemble(const struct assembly *a, struct err *e);

#endif
