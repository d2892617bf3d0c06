/* quote.h - shell words: for --dry-run, and for the /etc/rc that the
 * unpacker writes from an image's own Entrypoint and Cmd (never a user's
 * string: no shell ever evaluates one); and one character of bad input for
 * a parser's error. */
#ifndef CTRUN_QUOTE_H
#define CTRUN_QUOTE_H

#include <stddef.h>
#include <stdio.h>

/* Writes `s` so that a POSIX shell reads it back as exactly one word. */
void shell_quote(FILE *f, const char *s);
/* Words separated by spaces, each quoted. */
void shell_quote_argv(FILE *f, char *const *argv);

/* "character 'x'", "character 0x0a" (control, non-ASCII or a quote) or
 * "end of input" (NUL), in buf (32 bytes are enough). */
const char *char_name(char c, char *buf, size_t size);

#endif
