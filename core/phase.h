/* phase.h - the start-up timeline of one ctrun: named marks on the
 * monotonic clock, printed as the time of each phase (`--timings`, -v):
 * "ctrun: timings on HOST: topology 2.1 ms, image 48.0 ms, ...". */
#ifndef CTRUN_PHASE_H
#define CTRUN_PHASE_H

#include <stdio.h>

/* Ends the phase called name now (the first mark ends the phase since the
 * process started).  At most 16 marks; later ones are dropped. */
void phase_mark(const char *name);
/* One line on f: each phase's duration and the total; nothing without marks. */
void phase_report(FILE *f, const char *host);

/* Each phase's duration in ms, in order, then "total"; at most max rows
 * (PHASE_ROWS_MAX holds them all).  Returns how many. */
#define PHASE_ROWS_MAX 17
struct phase_row {
	const char *name;
	double ms;
};
size_t phase_rows(struct phase_row *rows, size_t max);

/* The phases whose names start with prefix as "NAME=MS;NAME=MS" (for
 * another ctrun to show: the batch step's staging, in the step's summary);
 * how many, or -1 when they do not fit. */
int phase_encode(char *buf, size_t size, const char *prefix);

#endif
