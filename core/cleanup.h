/* cleanup.h - what a variable owns, let go when it leaves scope (crun's
 * cleanup_free / cleanup_close, systemd's _cleanup_): GCC's and clang's
 * __attribute__((cleanup)) calls the helper with the variable's address on
 * every way out of its block, the early returns included, so a function
 * returns where it fails instead of jumping to a tail that frees by hand.
 *
 *   cleanup_free char *buf = NULL;    free(buf)
 *   cleanup_close int fd = -1;        close(fd) when fd >= 0 (errno kept)
 *   cleanup_strv struct strv v = {0}; strv_free(&v)
 *
 * A value handed on (returned, stored elsewhere) is moved out first:
 * take_ptr(&buf) returns buf and leaves NULL, take_fd(&fd) returns fd and
 * leaves -1, so the helper lets nothing go.  Variables are let go in the
 * reverse order of their declarations. */
#ifndef CTRUN_CLEANUP_H
#define CTRUN_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "strv.h"

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}

static inline void cleanup_closep(int *fd)
{
	int saved = errno;

	if (*fd >= 0)
		close(*fd);
	errno = saved; /* the error being returned is the caller's, not close's */
}

#define cleanup_free  __attribute__((cleanup(cleanup_freep)))
#define cleanup_close __attribute__((cleanup(cleanup_closep)))
#define cleanup_strv  __attribute__((cleanup(strv_free)))

/* *pp's value, which its owner no longer frees (*pp = NULL). */
static inline void *take_ptr(void *pp)
{
	void **p = pp, *v = *p;

	*p = NULL;
	return v;
}

/* *fd's value, which its owner no longer closes (*fd = -1). */
static inline int take_fd(int *fd)
{
	int v = *fd;

	*fd = -1;
	return v;
}

#endif
