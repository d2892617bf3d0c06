/* agentproto.c - the ctrun <-> agent messages (see agentproto.h). */
#include "agentproto.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

ssize_t agentproto_encode(const struct agent_msg *m, char *buf, size_t size)
{
	int n;

	switch (m->kind) {
	case AGENT_MSG_STARTED:
	case AGENT_MSG_PEER_FAILED:
		n = snprintf(buf, size, "%c", (char)m->kind);
		break;
	case AGENT_MSG_ENDED:
		n = snprintf(buf, size, "E\n");
		break;
	case AGENT_MSG_FAILED:
		if (m->rank < 0 || m->sig < 0 || m->sig > NSIG)
			return -1;
		n = snprintf(buf, size, "F%ld %d\n", m->rank, m->sig);
		break;
	case AGENT_MSG_PROGRESS:
		if (m->rank < 0 || m->ms < 0 || m->ms > AGENTPROTO_MS_MAX)
			return -1;
		n = snprintf(buf, size, "P%ld %lld %d\n", m->rank, m->ms, m->started ? 1 : 0);
		break;
	default:
		return -1;
	}
	if (n < 0 || (size_t)n >= size)
		return -1;
	return n;
}

int agentproto_send(int fd, const struct agent_msg *m)
{
	char buf[AGENTPROTO_MSG_MAX];
	ssize_t len = agentproto_encode(m, buf, sizeof(buf));

	if (len < 0) {
		errno = EINVAL;
		return -1;
	}
	return write(fd, buf, (size_t)len) == len ? 0 : -1;
}

/* "F<rank> <signal>": the text after the F. */
static int parse_failure(char *text, struct agent_msg *m)
{
	char *sp = strchr(text, ' ');
	long rank, sig;

	if (sp == NULL)
		return -1;
	*sp = '\0';
	if (parse_long(text, 0, LONG_MAX, &rank) < 0 || parse_long(sp + 1, 0, NSIG, &sig) < 0)
		return -1;
	m->rank = rank;
	m->sig = (int)sig;
	return 0;
}

/* "P<rank> <ms> <0|1>": the text after the P. */
static int parse_progress(char *text, struct agent_msg *m)
{
	char *sp = strchr(text, ' '), *sp2;
	long rank, ms, started;

	if (sp == NULL || (sp2 = strchr(sp + 1, ' ')) == NULL)
		return -1;
	*sp = *sp2 = '\0';
	if (parse_long(text, 0, LONG_MAX, &rank) < 0 ||
	    parse_long(sp + 1, 0, AGENTPROTO_MS_MAX, &ms) < 0 ||
	    parse_long(sp2 + 1, 0, 1, &started) < 0)
		return -1;
	m->rank = rank;
	m->ms = ms;
	m->started = started == 1;
	return 0;
}

/* A whole line, without its newline. */
static void decode_line(struct agentproto_reader *r, struct agent_msg *m)
{
	r->line[r->len] = '\0';
	m->kind = AGENT_MSG_BAD;
	if (r->overflow)
		return;
	if (r->line[0] == 'E' && r->line[1] == '\0')
		m->kind = AGENT_MSG_ENDED;
	else if (r->line[0] == 'F' && parse_failure(r->line + 1, m) == 0)
		m->kind = AGENT_MSG_FAILED;
	else if (r->line[0] == 'P' && parse_progress(r->line + 1, m) == 0)
		m->kind = AGENT_MSG_PROGRESS;
}

size_t agentproto_feed(struct agentproto_reader *r, const char *buf, size_t len,
		       struct agent_msg *m)
{
	*m = (struct agent_msg){ .kind = AGENT_MSG_NONE };
	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];

		/* One-byte messages stand between lines, never inside one. */
		if (r->len == 0 && !r->overflow &&
		    (ch == AGENT_MSG_STARTED || ch == AGENT_MSG_PEER_FAILED)) {
			m->kind = (enum agent_msg_kind)ch;
			return i + 1;
		}
		if (ch == '\n') {
			decode_line(r, m);
			r->len = 0;
			r->overflow = false;
			return i + 1;
		}
		if (r->len + 1 < sizeof(r->line))
			r->line[r->len++] = ch;
		else
			r->overflow = true;
	}
	return len;
}
