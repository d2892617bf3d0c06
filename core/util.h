/* util.h - small strict parsers and file helpers shared by every layer. */
#ifndef CTRUN_UTIL_H
#define CTRUN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Whole-string decimal integer in [min, max]; -1 (errno EINVAL/ERANGE) otherwise. */
int parse_long(const char *s, long min, long max, long *out);
/* "123", "50G", "1.5T", "512M", "10k" (powers of 1024) to bytes; -1 on anything else. */
int parse_size(const char *s, unsigned long long *out);
/* "1", "true", "yes", "on" / "0", "false", "no", "off" (case-insensitive). */
int parse_bool(const char *s, bool *out);
/* snprintf that fails (-1, errno ENAMETOOLONG) instead of truncating. */
int xsnprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Reads fd to its end, but never more than max bytes (retrying EINTR): a
 * NUL-terminated buffer the caller frees, its length in *len (not NULL).
 * A caller that must refuse a longer file asks for max + 1 and checks
 * *len > max: every bounded whole-file read of the tree is this one.
 * NULL with errno on a read error or ENOMEM. */
char *read_fd_max(int fd, size_t max, size_t *len);
/* Reads a small file whole (NUL-terminated); caller frees. */
char *read_file(const char *path, size_t *len);
/* open(2) of a file that must be a regular one, for a path that someone
 * else could have made (a shared store, a group's folder): with O_NONBLOCK,
 * so a FIFO or a device put there cannot stall the open, then fstat.  The
 * descriptor (O_CLOEXEC, O_NOCTTY added; *st filled when st is not NULL),
 * or -1 with errno: open's (ELOOP: a link under O_NOFOLLOW), or EINVAL when
 * it is not a regular file (then *st says what it is). */
int open_regular(const char *path, int flags, struct stat *st);
/* mkdir -p with mode; 0 if it exists already as a directory. */
int mkdir_p(const char *path, unsigned mode);
/* Waits for child pid at most timeout_ms, then SIGKILLs and reaps it.
 * Returns its wait status, or -1 when it was killed or was not ours. */
int wait_child(pid_t pid, long timeout_ms);
/* write(2) the whole buffer, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len);
/* A helper next to the running binary (ctrun-agent, ctrun-hook,
 * ctrun-worker next to ctrun: the build tree), else in ../libexec/ctrun
 * (make install, the Debian package): 0, or -1 with out naming the first
 * place looked at. */
int sibling_path(const char *name, char *out, size_t size);
/* The monotonic clock (CLOCK_MONOTONIC): milliseconds, and nanoseconds for
 * what is timed below a millisecond; every timeout and duration of the
 * tree reads it. */
long long mono_ms(void);
long long mono_ns(void);

#endif
