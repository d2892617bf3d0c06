/* agentproto.h - what ctrun and its in-container agent say to each other
 * while the workers run: every message, both directions, encoded and
 * decoded here only.
 *
 * Two FIFOs in the run directory (the runtimes close inherited
 * descriptors; a path works in all of them), see agentspec.h's
 * AGENT_EVENTS and AGENT_CONTROL:
 *
 *   events  (agent -> ctrun)
 *     "S"                  the agent started: a failure from here on is the
 *                          agent's or the workers', not the runtime's
 *     "F<rank> <signal>\n" the first worker failure: that rank, and the
 *                          signal that killed it (0: it exited); ctrun
 *                          cancels the Slurm step at once
 *     "E\n"                the supervisor ended and reported the workers'
 *                          end: a container that ends without it lost its
 *                          agent (killed, out of memory)
 *     "P<rank> <ms> <0|1>\n" --hang-timeout: that rank made no progress (a
 *                          line of output, a touch of its heartbeat file) for
 *                          ms; 1 once it made any (every second, each worker)
 *   control (ctrun -> agent)
 *     "U"                  a peer node failed (SIGURG from its cancel)
 *     end of file          ctrun is gone: the agent stops its workers
 *
 * S and U are one byte; F and E are lines.  Every message is shorter
 * than PIPE_BUF, so one write(2) of it is atomic.  The bytes on the wire
 * are those of the first releases: an agent and a ctrun built apart still
 * understand each other. */
#ifndef CTRUN_AGENTPROTO_H
#define CTRUN_AGENTPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum agent_msg_kind {
	AGENT_MSG_NONE = 0,            /* no whole message yet */
	AGENT_MSG_STARTED = 'S',
	AGENT_MSG_FAILED = 'F',
	AGENT_MSG_ENDED = 'E',
	AGENT_MSG_PROGRESS = 'P',
	AGENT_MSG_PEER_FAILED = 'U',
	AGENT_MSG_BAD = '?',           /* a line none of the above: skip it */
};

struct agent_msg {
	enum agent_msg_kind kind;
	long rank;    /* F: the rank that failed first, >= 0; P: the rank */
	int sig;      /* F: the signal that killed it, 0 when it exited */
	long long ms; /* P: how long the rank made no progress */
	bool started; /* P: it made progress since it started */
};

/* The longest line the decoder takes (a longer one decodes as BAD). */
#define AGENTPROTO_LINE_MAX 64
/* The longest silence a P message carries (ms, about 34 years). */
#define AGENTPROTO_MS_MAX (1L << 40)
/* Room for any encoded message. */
#define AGENTPROTO_MSG_MAX 48

/* Encodes m into buf; its length, or -1 when m is not a message one sends
 * (NONE, BAD, a negative rank, a signal out of range) or size is too small. */
ssize_t agentproto_encode(const struct agent_msg *m, char *buf, size_t size);

/* One write(2) of m's encoding to fd: 0, or -1 with errno (EINVAL: not
 * a message; EAGAIN: the FIFO is full, its reader gone slow). */
int agentproto_send(int fd, const struct agent_msg *m);

/* The decoder: bytes from a FIFO as they come, in any pieces. */
struct agentproto_reader {
	char line[AGENTPROTO_LINE_MAX];
	size_t len;
	bool overflow; /* the line being read is too long: BAD at its end */
};

/* Decodes from buf[0..len) up to and including the end of the first whole
 * message, which goes to *m (kind NONE when there was none); returns how
 * many bytes it took.  Call again with the rest. */
size_t agentproto_feed(struct agentproto_reader *r, const char *buf, size_t len,
		       struct agent_msg *m);

#endif
