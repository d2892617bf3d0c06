/* output.c - rank-prefixed, line-atomic output and log copies (see output.h). */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The batch buffer always takes at least one whole stream buffer as a
 * chunk: prefix + data + added newline. */
_Static_assert(OUT_OUTBUF >= OUT_INBUF + OUT_PREFIX_MAX + 1, "batch buffer too small");

/* A pipe or terminal gets a description of its own with O_NONBLOCK; the
 * shared one belongs to the caller's shell.  Files never block, and a
 * socket cannot be reopened: those stay as they are. */
static int reopen_nonblock(int fd)
{
	char path[64];
	struct stat st;

	if (fstat(fd, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
		return -1;
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
		return -1;
	if (xsnprintf(path, sizeof(path), "/proc/self/fd/%d", fd) < 0)
		return -1;
	return open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

int out_writer_init(struct out_writer *w, bool tee, bool nonblock)
{
	memset(w, 0, sizeof(*w));
	w->cur = -1;
	w->tee = tee;
	for (int i = 0; i < 2; i++) {
		int fd = nonblock ? reopen_nonblock(1 + i) : -1;

		w->owned[i] = fd >= 0;
		w->fd[i] = fd >= 0 ? fd : 1 + i;
	}
	w->buf = malloc(OUT_OUTBUF);
	if (w->buf == NULL) {
		out_writer_fini(w);
		return -1;
	}
	return 0;
}

void out_writer_fini(struct out_writer *w)
{
	for (int i = 0; i < 2; i++) {
		if (w->owned[i])
			close(w->fd[i]);
		w->owned[i] = false;
		w->fd[i] = 1 + i;
	}
	free(w->buf);
	w->buf = NULL;
	w->cur = -1;
}

void out_info(struct out_writer *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_vinfo(w, fmt, ap);
	va_end(ap);
}

void out_vinfo(struct out_writer *w, const char *fmt, va_list ap)
{
	size_t room = sizeof(w->info) - w->info_len;
	int r;

	/* Two bytes spare: the newline, and vsnprintf's NUL. */
	if (room < 2)
		return;
	r = vsnprintf(w->info + w->info_len, room - 1, fmt, ap);
	if (r < 0)
		return;
	if ((size_t)r >= room - 1)
		r = (int)(room - 2); /* truncated: keep what fit */
	w->info_len += (size_t)r;
	w->info[w->info_len++] = '\n';
}

/* Writes the pending batch; false if the sink would block. */
static bool write_batch(struct out_writer *w, bool *moved)
{
	while (w->cur >= 0) {
		ssize_t r;

		if (w->off == w->len || w->dead[w->cur]) {
			w->cur = -1;
			break;
		}
		r = write(w->fd[w->cur], w->buf + w->off, w->len - w->off);
		if (r > 0) {
			w->off += (size_t)r;
			*moved = true;
		} else if (r < 0 && errno == EINTR) {
			continue;
		} else if (r < 0 && errno == EAGAIN) {
			return false;
		} else {
			/* EPIPE, EIO (terminal hung up), ENOSPC: the reader is gone.
			 * Keep draining the workers so they never block on us. */
			w->dead[w->cur] = true;
		}
	}
	return true;
}

static bool stream_ready(const struct out_stream *s)
{
	if (s->nl_end > s->off)
		return true;
	if (s->len == s->off)
		return false;
	/* A partial line goes out when it fills the buffer or at EOF. */
	return s->len - s->off == OUT_INBUF || s->fd < 0;
}

static void log_copy(struct out_stream *s, const char *p, size_t len, bool add_nl)
{
	if (s->log_fd < 0 || len == 0)
		return;
	/* A full disk stops logging of this stream, not the job. */
	if (write_all(s->log_fd, p, len) < 0 || (add_nl && write_all(s->log_fd, "\n", 1) < 0))
		s->log_fd = -1;
}

/* Moves the next batch of one stream into dst (if copy) and its log;
 * returns the bytes put in dst.  Consumes whole lines only, as many as
 * fit, or one chunk of a line too long for the stream buffer. */
static size_t take_batch(struct out_stream *s, char *dst, size_t cap, bool copy)
{
	char *start = s->buf + s->off, *p = start;
	size_t n = 0;
	bool chunk = s->nl_end <= s->off;

	if (!chunk) {
		char *end = s->buf + s->nl_end;

		if (!copy)
			p = end;
		while (copy && p < end) {
			/* Never NULL: end follows a newline. */
			char *q = memchr(p, '\n', (size_t)(end - p));
			size_t line = (size_t)(q + 1 - p);

			if (n + s->plen + line > cap)
				break;
			memcpy(dst + n, s->prefix, s->plen);
			memcpy(dst + n + s->plen, p, line);
			n += s->plen + line;
			p = q + 1;
		}
	} else {
		p = s->buf + s->len;
		if (copy) {
			memcpy(dst, s->prefix, s->plen);
			memcpy(dst + s->plen, start, (size_t)(p - start));
			n = s->plen + (size_t)(p - start);
			dst[n++] = '\n';
		}
	}
	log_copy(s, start, (size_t)(p - start), chunk);
	s->off = (size_t)(p - s->buf);
	if (s->off == s->len)
		s->off = s->len = s->nl_end = 0;
	return n;
}

bool out_pump(struct out_writer *w, struct out_stream *s, size_t n)
{
	bool moved = false;

	for (;;) {
		size_t i = 0, k;

		if (!write_batch(w, &moved))
			return moved;
		if (w->info_len > 0) {
			memcpy(w->buf, w->info, w->info_len);
			w->off = 0;
			w->len = w->info_len;
			w->info_len = 0;
			w->cur = OUT_STDERR;
			continue;
		}
		for (k = 0; k < n; k++) {
			i = (w->next + k) % n;
			if (stream_ready(&s[i]))
				break;
		}
		if (k == n)
			return moved;
		/* One batch per stream, then the next one's turn. */
		w->next = (i + 1) % n;
		w->off = 0;
		w->len = take_batch(&s[i], w->buf, OUT_OUTBUF, w->tee && !w->dead[s[i].sink]);
		w->cur = s[i].sink;
		moved = true;
	}
}

int out_writer_blocked_fd(const struct out_writer *w)
{
	return w->cur >= 0 ? w->fd[w->cur] : -1;
}

bool out_writer_idle(const struct out_writer *w)
{
	return w->cur < 0 && w->info_len == 0;
}

void out_writer_flush(struct out_writer *w, int timeout_ms)
{
	long long t0 = mono_ms();

	for (;;) {
		struct pollfd p = { .events = POLLOUT };
		long left;

		out_pump(w, NULL, 0);
		p.fd = out_writer_blocked_fd(w);
		if (p.fd < 0)
			return;
		left = timeout_ms - (long)(mono_ms() - t0);
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			w->cur = -1; /* reader stalled: drop the rest */
			w->info_len = 0;
			return;
		}
	}
}

void out_stream_init(struct out_stream *s, int fd, int sink, int log_fd, const char *prefix)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->sink = sink;
	s->log_fd = log_fd;
	s->plen = strnlen(prefix, sizeof(s->prefix) - 1);
	memcpy(s->prefix, prefix, s->plen);
}

bool out_stream_wants_read(struct out_stream *s)
{
	if (s->fd < 0)
		return false;
	/* Room at the end only: move the partial line to the front. */
	if (s->len == OUT_INBUF && s->off > 0) {
		memmove(s->buf, s->buf + s->off, s->len - s->off);
		s->nl_end = s->nl_end > s->off ? s->nl_end - s->off : 0;
		s->len -= s->off;
		s->off = 0;
	}
	return s->len < OUT_INBUF;
}

int out_stream_read(struct out_stream *s)
{
	ssize_t r;
	char *nl;

	if (s->fd < 0)
		return 0;
	if (s->buf == NULL && (s->buf = malloc(OUT_INBUF)) == NULL) {
		out_stream_close(s); /* out of memory: lose this stream, not the job */
		return 0;
	}
	r = read(s->fd, s->buf + s->len, OUT_INBUF - s->len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return -1;
	if (r <= 0) {
		out_stream_close(s);
		return 0;
	}
	nl = memrchr(s->buf + s->len, '\n', (size_t)r);
	if (nl != NULL)
		s->nl_end = (size_t)(nl + 1 - s->buf);
	s->len += (size_t)r;
	return 1;
}

void out_stream_close(struct out_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

bool out_stream_done(const struct out_stream *s)
{
	return s->fd < 0 && s->off == s->len;
}

bool out_streams_done(const struct out_stream *st, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!out_stream_done(&st[j]))
			return false;
	return true;
}

void out_stream_free(struct out_stream *s)
{
	out_stream_close(s);
	free(s->buf);
	s->buf = NULL;
	s->off = s->len = s->nl_end = 0;
}
