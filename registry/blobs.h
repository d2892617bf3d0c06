/* blobs.h - one blob from the registry into the store's blob cache:
 * verified against its digest and size before it is published (a mismatch
 * deletes it and fails), resumed with an HTTP Range after a dropped
 * connection, and, when an earlier pull was interrupted, from the bytes it
 * left (tmp/<hex>.part, taken by rename so that one puller resumes it). */
#ifndef CTRUN_BLOBS_H
#define CTRUN_BLOBS_H

#include <pthread.h>

#include "manifest.h"
#include "session.h"

/* Bytes moved, for a progress meter (any thread). */
struct blob_meter {
	pthread_mutex_t lock;
	unsigned long long done, total;
	void (*tick)(struct blob_meter *m); /* under lock; NULL = none */
	void *arg;
};

/* The blob d of s's repository in the store: *path gets its file.
 * Present already: nothing is downloaded. */
int blob_fetch(struct session *s, const char *store, const struct descriptor *d,
	       struct blob_meter *m, char *path, size_t size, struct err *e);

#endif
