/* output.h - line-atomic, rank-prefixed copying of worker output.
 *
 * Each worker's stdout and stderr arrive on pipes (one out_stream each).
 * One out_writer copies complete lines to ctrun's stdout / stderr, with
 * "[rankN]: " before each, in batches: one write() holds whole lines of one
 * stream only, and a batch is finished before another starts, so lines of
 * different ranks never splice even through a slow or non-blocking reader.
 * A line longer than the stream buffer goes out in chunks, each prefixed
 * and ended with a newline; a last line without newline gets one at EOF.
 * Per-rank log files get the same lines, unprefixed.
 *
 * Memory: OUT_INBUF per stream (allocated on its first byte) and one
 * OUT_OUTBUF batch buffer; nothing is allocated per line. */
#ifndef CTRUN_OUTPUT_H
#define CTRUN_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define OUT_INBUF (64 * 1024)
#define OUT_OUTBUF (128 * 1024)
#define OUT_PREFIX_MAX 32

enum { OUT_STDOUT = 0, OUT_STDERR = 1 };

struct out_stream {
	int fd;                      /* pipe read end (non-blocking); -1 after EOF */
	int sink;                    /* OUT_STDOUT or OUT_STDERR */
	int log_fd;                  /* unprefixed copy, -1 = none; not owned */
	char prefix[OUT_PREFIX_MAX]; /* "[rankN]: " or "" */
	size_t plen;
	char *buf;                   /* OUT_INBUF bytes, NULL until needed */
	size_t off, len;             /* not yet consumed: buf[off..len) */
	size_t nl_end;               /* just past the last '\n' in buf; none if <= off */
};

struct out_writer {
	int fd[2];         /* ctrun's stdout / stderr, maybe reopened non-blocking */
	bool owned[2];     /* fd[i] is our own reopened descriptor */
	bool dead[2];      /* writing failed for good (EPIPE...): discard */
	bool tee;          /* copy worker lines to fd[] (false: log files only) */
	char *buf;         /* the batch being written, OUT_OUTBUF bytes */
	size_t off, len;
	int cur;           /* sink of the pending batch, -1 = idle */
	size_t next;       /* round robin over streams */
	char info[1024];   /* ctrun's own lines for stderr, sent between batches */
	size_t info_len;
};

/* Sets up the writer on fds 1 and 2.  With nonblock, a pipe or terminal
 * is reopened through /proc/self/fd with O_NONBLOCK, a description of its
 * own, so a stalled reader never blocks ctrun and the flag never leaks to
 * the caller's shell; anything else (file, socket) is written blocking. */
int out_writer_init(struct out_writer *w, bool tee, bool nonblock);
void out_writer_fini(struct out_writer *w);
/* Queues one line of ctrun's own (printf format, newline added) for stderr. */
void out_info(struct out_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void out_vinfo(struct out_writer *w, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Writes what it can: the pending batch, queued info, then ready streams
 * in turn, until everything is out or the sink would block.  Returns true
 * if any byte moved. */
bool out_pump(struct out_writer *w, struct out_stream *s, size_t n);
/* Descriptor to poll for POLLOUT while a batch is stuck, else -1. */
int out_writer_blocked_fd(const struct out_writer *w);
bool out_writer_idle(const struct out_writer *w);
/* Finishes the pending batch and info, waiting at most timeout_ms. */
void out_writer_flush(struct out_writer *w, int timeout_ms);

/* Takes ownership of the read end `fd`. */
void out_stream_init(struct out_stream *s, int fd, int sink, int log_fd, const char *prefix);
/* True if the stream is open and has room: poll it for POLLIN. */
bool out_stream_wants_read(struct out_stream *s);
/* One read(): 1 = got bytes, 0 = EOF or error (fd closed), -1 = nothing now. */
int out_stream_read(struct out_stream *s);
/* Closes the pipe now (data already read is still flushed). */
void out_stream_close(struct out_stream *s);
/* EOF seen and every byte consumed. */
bool out_stream_done(const struct out_stream *s);
/* out_stream_done for each of st[0..n). */
bool out_streams_done(const struct out_stream *st, size_t n);
void out_stream_free(struct out_stream *s);

#endif
