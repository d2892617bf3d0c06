/* quote.h - POSIX shell quoting, for --dry-run output only (never executed by ctrun). */
#ifndef CTRUN_QUOTE_H
#define CTRUN_QUOTE_H

#include <stdio.h>

/* Writes `s` so that a POSIX shell reads it back as exactly one word. */
void shell_quote(FILE *f, const char *s);
/* Words separated by spaces, each quoted. */
void shell_quote_argv(FILE *f, char *const *argv);

#endif
