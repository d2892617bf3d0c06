/* err.h - error values that carry context up to main, printed once.
 *
 * A function that fails fills a struct err with what and where, plus the
 * exit code ctrun should end with, and returns -1.  Only main prints it.
 * The message is always one line: control bytes in what it quotes are
 * written as \n, \t or \xNN.
 *
 * Folder core/: the bottom layer: errors, string vectors, strict parsers,
 * quoting, CPU lists, the in-root resolver (inroot.h), lexical path forms
 * and link-safe removal (rootpath.h), the private-directory check
 * (privdir.h), the trusted walk to a log directory (trustdir.h), fstab lines
 * (fstab.h), the signal loop (sigloop.h).  May use: nothing of ctrun's; the C
 * library only (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_ERR_H
#define CTRUN_ERR_H

#include <stddef.h>

/* Exit codes (design brief): a worker's own status passes through. */
enum {
	EXIT_OK = 0,
	EXIT_USAGE = 2,      /* usage or config error */
	EXIT_CTRUN = 125,    /* ctrun failed before any worker started */
	EXIT_NOEXEC = 126,   /* command found but not executable */
	EXIT_NOTFOUND = 127, /* command not found */
};

struct err {
	int code;       /* exit code to end with; 0 = no error */
	char msg[1024]; /* one line, no trailing newline */
};

/* Sets the error (first error wins is NOT applied: the latest call
 * overwrites) and returns -1 so callers can `return err_set(...)`. */
int err_set(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like err_set, appending ": strerror(errno)". */
int err_sys(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with more context ("config x.ini: ..."). */
int err_wrap(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
