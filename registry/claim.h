/* claim.h - one pull per digest and one digest per job step, on a store
 * that may be a shared file system (no flock there: enroot#154).
 *
 * A claim is tmp/<hex>.claim, made with O_EXCL, holding "HOST PID"; its
 * holder pulls and touches it every CLAIM_BEAT_S seconds.  The others
 * wait for images/sha256-<hex>.sqsh, and take the claim over (rename,
 * then O_EXCL again) when its holder is dead: on the same host its pid is
 * gone, elsewhere the claim has not been touched for CLAIM_STALE_S.
 * Something at the claim's name that is not a regular file (a FIFO, a
 * link, a folder a group member put there) is nobody's claim: removed.
 *
 * A job record is jobs/<JOB>.<STEP>-<hash of the reference [and node]>,
 * written by the step's task 0 (with a node-local store: each node's
 * first task) once it knows the digest (or "!" and its error when it
 * could not): the step's other tasks take the digest from there, not from
 * the registry, so a tag moved during the job cannot split it.  The name
 * is the same in every run of a job (a requeued job keeps its id), so the
 * text names the run (cluster, job, step, Slurm's restart count and start
 * time, reference, node) and a reader takes only a regular file of its own
 * user's whose text names its own run: an earlier run's record, its error
 * included, and anything a group member planted are ignored until task 0
 * replaces them.  Records older than JOB_RECORD_TTL_S are removed by the
 * task 0s that come after. */
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

/* The run a job record belongs to (Slurm's environment; NULL: absent). */
struct job_run {
	const char *cluster;   /* SLURM_CLUSTER_NAME */
	const char *job, *step; /* SLURM_JOB_ID, SLURM_STEP_ID: required */
	const char *restart;   /* SLURM_RESTART_COUNT: the run of a requeued job (NULL: 0) */
	const char *start;     /* SLURM_JOB_START_TIME (Slurm 23.02 and later) */
	const char *node;      /* a node-local store: the node whose tasks share it */
};

#define JOB_KEY_MAX 64
#define JOB_RUN_MAX 1024
#define JOB_TEXT_MAX 4096
#define JOB_RECORD_TTL_S (24 * 3600)

struct job_record {
	char key[JOB_KEY_MAX]; /* its name under jobs/ */
	char run[JOB_RUN_MAX]; /* the lines its text begins with */
};

/* Pure: the record of `reference` in run r; -1 when a field is missing or
 * not plain (digits for the job, step, restart count and start time;
 * letters, digits, '.', '_', '-' for the cluster and node). */
int job_record_of(const struct job_run *r, const char *reference, struct job_record *out);
/* Pure: a record's text (the run's lines, then the digest or "!" and the
 * error); -1 when it does not fit. */
int job_record_format(const struct job_record *r, const char *digest_or_error, char *out,
		      size_t size);
/* Pure: what `text` says for r's run: 1 a digest (in out), 2 task 0's
 * error (in out), 0 nothing (another run's record, or not a record). */
int job_record_parse(const struct job_record *r, const char *text, char *out, size_t size);

/* Writes the record (a private temporary file renamed over whatever is at
 * its name). */
int job_record_write(const char *store, const struct job_record *r, const char *digest_or_error,
		     struct err *e);
/* Waits (at most wait_s) for this run's record: 0 with the digest, -1 when
 * task 0 failed (its reason) or never wrote it. */
int job_record_wait(const char *store, const struct job_record *r, long wait_s, bool quiet,
		    char *digest, size_t size, struct err *e);
/* Removes records (and whatever else is in jobs/) untouched for
 * JOB_RECORD_TTL_S: their runs are long over. */
void job_records_sweep(const char *store);

#endif
