/* claim.h - one pull per digest and one digest per job step, on a store
 * that may be a shared file system (no flock there: enroot#154).
 *
 * A claim is tmp/<hex>.claim, made with O_EXCL, holding "HOST PID"; its
 * holder pulls and touches it every CLAIM_BEAT_S seconds.  The others
 * wait for images/sha256-<hex>.sqsh, and take the claim over (rename,
 * then O_EXCL again) when its holder is dead: on the same host its pid is
 * gone, elsewhere the claim has not been touched for CLAIM_STALE_S.
 *
 * A job record is jobs/<JOB>.<STEP>-<reference hash>, written by the
 * step's task 0 once it knows the digest (or "!" and its error when it
 * could not): the step's other tasks take the digest from there, not from
 * the registry, so a tag moved during the job cannot split it. */
#ifndef CTRUN_CLAIM_H
#define CTRUN_CLAIM_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include "err.h"

#define CLAIM_BEAT_S 5
#define CLAIM_STALE_S 30

struct claim {
	char path[PATH_MAX];
	int fd;
	bool held;
	pthread_t beat;
	pthread_mutex_t lock;
	pthread_cond_t stop;
	bool stopping, beating;
};

/* 1: claimed, the caller pulls and then calls claim_release; 0: the image
 * (`image`, the path the digest publishes to) appeared meanwhile; -1: an
 * error, or wait_s passed (the message names the holder). */
int claim_take(const char *store, const char *digest, const char *image, long wait_s,
	       bool quiet, struct claim *c, struct err *e);
void claim_release(struct claim *c);

/* Pure: the job record key of a reference in step JOB.STEP. */
int job_record_key(const char *job, const char *step, const char *reference, char *out,
		   size_t size);
/* The record: the digest, or "!" and why task 0 failed. */
int job_record_write(const char *store, const char *key, const char *digest_or_error,
		     struct err *e);
/* Waits (at most wait_s) for the record: 0 with the digest, -1 when task 0
 * failed (its reason) or never wrote it. */
int job_record_wait(const char *store, const char *key, long wait_s, bool quiet, char *digest,
		    size_t size, struct err *e);

#endif
