/* blobs.h - one blob from the registry into the store's blob cache:
 * verified against its digest and size before it is published (a mismatch
 * deletes it and fails) and again before a blob found in the store is used
 * (one that is not the digest's bytes is downloaded anew), resumed with an
 * HTTP Range after a dropped connection, and, when an earlier pull was
 * interrupted, from the bytes it left (tmp/<hex>.part, taken by rename so
 * that one puller resumes them, then read only and hashed with the rest:
 * when the whole is not the blob, it is downloaded whole once more).
 * Bounded before anything is downloaded (blobs_budget). */
#ifndef CTRUN_BLOBS_H
#define CTRUN_BLOBS_H

#include <pthread.h>
#include <stdbool.h>

#include "manifest.h"
#include "session.h"

/* Bytes moved, for a progress meter (any thread). */
struct blob_meter {
	pthread_mutex_t lock;
	unsigned long long done, total;
	void (*tick)(struct blob_meter *m); /* under lock; NULL = none */
	void *arg;
};

/* A blob read while it downloads (the pull streams a layer as it arrives):
 * blob_fetch publishes here how far its file is written.  Bytes read before
 * the download is verified are only ever used for an image that is
 * published after it is (registry/assemble.c checks every blob's state and gen
 * before the rename). */
struct blob_live {
	pthread_mutex_t lock;
	pthread_cond_t more;
	int fd;           /* the reader's descriptor of the file; -1 before the start */
	long long avail;  /* bytes [0, avail) are in fd */
	int state;        /* 0 under way, 1 whole and verified, -1 failed */
	unsigned gen;     /* restarts from byte 0: bytes read before one may be other bytes */
};

void blob_live_init(struct blob_live *b);
void blob_live_free(struct blob_live *b);
/* Up to n bytes at off, waiting for them: 0 at the end of a verified blob,
 * -1 with e when the download failed, restarted after the reader's first
 * byte (*gen, 0 before: set at the first read), or stop(arg) says so. */
long long blob_live_read(struct blob_live *b, long long off, void *buf, size_t n, unsigned *gen,
			 bool (*stop)(void *arg), void *arg, struct err *e);

/* The blob d of s's repository, from the store or downloaded into it: a
 * descriptor (offset 0) of exactly its bytes, size and digest checked, on
 * a file no one but the caller or root can change (a blob another member
 * of a group's store owns is copied while it is hashed), so what is
 * applied is what was verified whatever is renamed in the store
 * meanwhile.  live (NULL: none) is kept up to date while it downloads
 * (a download resumed from an earlier pull's bytes publishes only once
 * verified).  -1 with e. */
int blob_fetch(struct session *s, const char *store, const struct descriptor *d,
	       struct blob_meter *m, struct blob_live *live, struct err *e);

/* Pure: refuses (EXIT_CTRUN, naming the image `name`, the blob and the
 * bound) an image whose config is larger than LAYERFILE_CONFIG_MAX, one of
 * whose layers, or all of them together, are larger than max ([cache]
 * max_unpacked; 0 none: a compressed layer is hardly ever larger than what
 * it unpacks to), or whose `need` bytes still to download are more than the
 * store's `avail` free bytes.  By the manifest's sizes, before anything is
 * downloaded; a download is then cut at its declared size (blob_fetch). */
int blobs_fit(const struct manifest *m, unsigned long long max, unsigned long long need,
	      unsigned long long avail, const char *name, struct err *e);
/* blobs_fit with the bytes of m not in store yet and the free space of
 * the store's file system. */
int blobs_budget(const char *store, const struct manifest *m, unsigned long long max,
		 const char *name, struct err *e);

#endif
