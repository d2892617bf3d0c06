/* orphans.h - the processes a child subreaper inherits: what left a
 * worker's process group (setsid) and was orphaned is ctrun's child, so
 * it can be found in /proc and signalled although no group reaches it. */
#ifndef CTRUN_ORPHANS_H
#define CTRUN_ORPHANS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Signals with sig (0: only counts) each child of self for which known()
 * says false; returns how many there are (a zombie counts until reaped). */
size_t orphans_signal(pid_t self, bool (*known)(void *arg, pid_t pid), void *arg, int sig);

#endif
