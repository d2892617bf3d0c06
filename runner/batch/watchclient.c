/* watchclient.c - a step's ctrun's side of the watch (see watchclient.h). */
#include "watchclient.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "strv.h"
#include "util.h"
#include "watchproto.h"

#define CONNECT_MS 5000

static int fd = -1;
static char stop_why[WATCH_WHY_MAX];
static struct watch_reader rd;

bool watchc_on(void)
{
	return fd >= 0;
}

/* A connected socket to ADDR:PORT (the last colon splits), or -1. */
static int dial(const char *where, char *why, size_t size)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	const char *colon = strrchr(where, ':');
	char host[128];
	struct pollfd p;
	int s = -1, err = 0;
	socklen_t len = sizeof(err);

	if (colon == NULL || xsnprintf(host, sizeof(host), "%.*s", (int)(colon - where), where) < 0 ||
	    getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
		snprintf(why, size, "not an address");
		return -1;
	}
	s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0 || (connect(s, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS))
		goto fail;
	p = (struct pollfd){ .fd = s, .events = POLLOUT };
	if (poll(&p, 1, CONNECT_MS) != 1) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
		errno = err;
		goto fail;
	}
	freeaddrinfo(ai);
	/* Blocking from here: the last word waits (SO_SNDTIMEO), the rest
	 * asks not to (MSG_DONTWAIT). */
	if (fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(s);
		snprintf(why, size, "%s", strerror(errno));
		return -1;
	}
	return s;
fail:
	snprintf(why, size, "%s", strerror(errno));
	if (s >= 0)
		close(s);
	freeaddrinfo(ai);
	return -1;
}

/* The next line from the batch ctrun within ms, into line; -1 if none. */
static int read_line(char *line, int ms)
{
	long long until = mono_ms() + ms;
	int r;

	while ((r = watch_reader_next(&rd, line)) == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = until - mono_ms();
		ssize_t got;

		if (left < 0 || poll(&p, 1, (int)left) != 1)
			return -1;
		got = recv(fd, rd.buf + rd.len, sizeof(rd.buf) - rd.len, MSG_DONTWAIT);
		if (got <= 0 && !(got < 0 && (errno == EAGAIN || errno == EINTR)))
			return -1;
		if (got > 0)
			rd.len += (size_t)got;
	}
	return r > 0 ? 0 : -1;
}

static int say(const struct watch_msg *m, int flags)
{
	char line[WATCH_LINE_MAX];
	int len = watchproto_encode(m, line, sizeof(line));

	if (fd < 0 || len < 0)
		return -1;
	return send(fd, line, (size_t)len, MSG_NOSIGNAL | flags) == len ? 0 : -1;
}

void watchc_open(const char *host, const char *job, char *const *envp, bool quiet)
{
	const char *where = envp_get(envp, WATCH_ENV), *a = envp_get(envp, "CTRUN_RESTART_COUNT");
	const char *st = envp_get(envp, "SLURM_STEP_ID");
	uint8_t secret[JOBKEY_LEN], key[JOBKEY_LEN], nonce[WATCH_NONCE_LEN];
	struct watch_msg m = { .kind = WATCH_HELLO };
	char line[WATCH_LINE_MAX], why[160] = "";
	struct err e = { 0 };

	if (where == NULL || *where == '\0' || fd >= 0)
		return;
	if (a == NULL || parse_long(a, 0, 1L << 30, &m.attempt) < 0 || st == NULL ||
	    parse_long(st, 0, 1L << 40, &m.step) < 0 || xsnprintf(m.host, sizeof(m.host), "%s", host) < 0) {
		snprintf(why, sizeof(why), "this step's CTRUN_RESTART_COUNT, SLURM_STEP_ID or host name");
		goto fail;
	}
	if (jobkey_secret(envp, secret, &e) < 0) {
		snprintf(why, sizeof(why), "%s", e.msg);
		goto fail;
	}
	jobkey_derive(secret, "watch", job, NULL, key);
	explicit_bzero(secret, sizeof(secret));
	fd = dial(where, why, sizeof(why));
	if (fd < 0)
		goto fail;
	if (read_line(line, CONNECT_MS) < 0 || watchproto_parse_greeting(line, nonce) < 0) {
		snprintf(why, sizeof(why), "no greeting");
		goto fail;
	}
	watchproto_mac(key, nonce, m.attempt, m.step, m.host, m.mac);
	explicit_bzero(key, sizeof(key));
	if (say(&m, 0) < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		goto fail;
	}
	return;
fail:
	explicit_bzero(key, sizeof(key));
	if (fd >= 0)
		close(fd);
	fd = -1;
	if (!quiet)
		fprintf(stderr, "ctrun: the batch ctrun's watch at %s cannot be reached from %s (%s): "
			"a loss of this node will be seen only by Slurm\n", where, host, why);
}

void watchc_progress(long rank, long long ms, bool started)
{
	struct watch_msg m = { .kind = WATCH_PROGRESS, .rank = rank, .ms = ms, .started = started };

	(void)say(&m, MSG_DONTWAIT);
}

void watchc_done(int status)
{
	struct watch_msg m = { .kind = WATCH_DONE, .status = status & 255 };
	struct timeval tv = { .tv_sec = 2 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)say(&m, 0);
	close(fd);
	fd = -1;
}

const char *watchc_stop_why(void)
{
	char line[WATCH_LINE_MAX];
	struct watch_msg m;

	while (fd >= 0 && stop_why[0] == '\0' && read_line(line, 0) == 0)
		if (watchproto_parse(line, &m) == 0 && m.kind == WATCH_STOP)
			snprintf(stop_why, sizeof(stop_why), "%s", m.why);
	return stop_why;
}
