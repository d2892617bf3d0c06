/* progress.h - a one-line progress meter on stderr for long cache creations.
 *
 * The caller decides whether it is on (a tty, [cache] progress); when off,
 * every call is a no-op, so code paths need no `if`. */
#ifndef CTRUN_PROGRESS_H
#define CTRUN_PROGRESS_H

#include <stdbool.h>

struct progress {
	bool on;
	const char *what;             /* "unpacking busybox-docker.tar" */
	unsigned long long total;     /* bytes; 0 = unknown */
	unsigned long long done;
	long long last_ms;            /* last redraw */
	long long start_ms;           /* for the rate */
	bool drawn;
};

void progress_start(struct progress *p, bool on, const char *what, unsigned long long total);
/* Adds n bytes; redraws at most 5 times a second. */
void progress_add(struct progress *p, unsigned long long n);
/* Final redraw (at 100% when ok) and newline, only if something was drawn. */
void progress_end(struct progress *p, bool ok);

#endif
