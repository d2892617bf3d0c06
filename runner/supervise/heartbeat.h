/* heartbeat.h - when each worker last made progress, for the hang watch
 * (--hang-timeout): a line of its output (when the supervisor reads it),
 * or a touch of its heartbeat file, the lighter choice for a script that
 * prints rarely (os.utime, `touch`, writing to it).
 *
 * The caller makes a private directory (progress_dir_make) and gives each
 * worker PROGRESS_ENV=DIR/rank-R; progress_init creates the files before
 * the workers start, progress_poll looks at their times, progress_fini
 * removes them.  A file's time is only compared with its own last one, so
 * no clock is trusted but this process's monotonic one. */
#ifndef CTRUN_HEARTBEAT_H
#define CTRUN_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "err.h"

#define PROGRESS_ENV "CTRUN_HEARTBEAT_FILE"
/* How often the supervisor tells how long each worker has been silent. */
#define PROGRESS_TICK_MS 1000

struct progress {
	size_t n;
	long long *last;        /* per worker: mono_ms of its last progress */
	bool *started;          /* per worker: it made progress since it started */
	char **file;            /* per worker: its heartbeat file, NULL for none */
	struct timespec *mtime; /* per worker: the file's time when last looked at */
	long long next_tick;    /* mono_ms of the next tick */
};

/* A private directory for the heartbeat files: base/ctrun-hb.XXXXXX, mode
 * 0700, into out.  -1 with e (EXIT_CTRUN). */
int progress_dir_make(const char *base, char *out, size_t size, struct err *e);
/* Removes it and whatever is in it (one level). */
void progress_dir_remove(const char *dir);
/* Worker rank's heartbeat file in dir. */
int progress_file(const char *dir, long rank, char *out, size_t size);

/* For n workers of ranks[i]; with dir, each one's file is made there (empty,
 * 0600, never through a link).  Every worker counts as making progress now. */
int progress_init(struct progress *p, size_t n, const long *ranks, const char *dir,
		  struct err *e);
void progress_fini(struct progress *p);

/* Worker i made progress (a line of output). */
void progress_saw(struct progress *p, size_t i);
/* Looks at the heartbeat files: a file whose time changed is progress now. */
void progress_poll(struct progress *p);
/* How long worker i has been silent, in ms (since its start, before its
 * first progress). */
long long progress_silent(const struct progress *p, size_t i);
/* Whether worker i made progress since it started: before, it is starting
 * (imports, a checkpoint read), which --hang-timeout gives longer. */
bool progress_started(const struct progress *p, size_t i);

#endif
