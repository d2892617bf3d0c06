/* watchproto.h - what the ctruns of a batch-mode step and the batch ctrun
 * say to each other over the watch (watch.h), encoded and decoded here
 * only.
 *
 * Each node's ctrun connects to the batch ctrun's watch (WATCH_ENV: ADDR:PORT)
 * at its start.  The batch ctrun greets with a fresh nonce; the node proves
 * it holds the job's secret (jobkey.h: CTRUN_JOB_SECRET, the "watch" key)
 * with a MAC over the nonce, the attempt, its step and its host; then lines:
 *
 *   batch -> node   "CTRUN-WATCH 1 <nonce: 32 hex>"
 *   node -> batch   "H <attempt> <step> <host> <mac: 64 hex>"   hello
 *                   "P <rank> <ms> <0|1>"  rank made no progress for ms (output,
 *                                    or a touch of its heartbeat file); 1 once
 *                                    it made any since it started
 *                   "D <status>"     this node's ctrun ends with status
 *   batch -> node   "S <why>"        the batch ctrun stops the step (why: a
 *                                    few words for the node's own line)
 *
 * A node's connection that ends without its D line is a lost node: the
 * node, its slurmd or its ctrun died.  Lines end with '\n', are printable
 * ASCII and at most WATCH_LINE_MAX bytes; anything else ends the
 * connection.  Pure: bytes in, struct out, for the unit tests and the
 * fuzz target. */
#ifndef CTRUN_WATCHPROTO_H
#define CTRUN_WATCHPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jobkey.h"

#define WATCH_ENV "CTRUN_BATCH_WATCH"
#define WATCH_LINE_MAX 160
#define WATCH_NONCE_LEN 16
#define WATCH_HOST_MAX 64 /* bytes of a host name, its NUL included */
#define WATCH_WHY_MAX 96  /* bytes of an S line's why, its NUL included */
#define WATCH_RANK_MAX (1L << 24)

enum watch_kind {
	WATCH_NONE = 0,
	WATCH_HELLO = 'H',
	WATCH_PROGRESS = 'P',
	WATCH_DONE = 'D',
	WATCH_STOP = 'S',
};

struct watch_msg {
	enum watch_kind kind;
	long attempt;                /* H */
	long step;                   /* H: the node's Slurm step */
	char host[WATCH_HOST_MAX];   /* H */
	uint8_t mac[JOBKEY_LEN];     /* H */
	long rank;                   /* P */
	long long ms;                /* P */
	bool started;                /* P */
	int status;                  /* D: 0..255 */
	char why[WATCH_WHY_MAX];     /* S */
};

/* The greeting line for nonce into buf (with its '\n'); its length or -1. */
int watchproto_greeting(const uint8_t nonce[WATCH_NONCE_LEN], char *buf, size_t size);
/* A greeting line (no '\n'): 0 with its nonce, or -1. */
int watchproto_parse_greeting(const char *line, uint8_t nonce[WATCH_NONCE_LEN]);

/* The hello's MAC: HMAC-SHA256(key, "ctrun-watch" NUL nonce attempt NUL
 * step NUL host). */
void watchproto_mac(const uint8_t key[JOBKEY_LEN], const uint8_t nonce[WATCH_NONCE_LEN],
		    long attempt, long step, const char *host, uint8_t mac[JOBKEY_LEN]);

/* m as one line into buf (with its '\n'); its length, or -1 when m is no
 * message one sends (a bad host, a rank or status out of range) or buf is
 * too small. */
int watchproto_encode(const struct watch_msg *m, char *buf, size_t size);
/* One line (its '\n' taken off) into m: 0, or -1 for anything else. */
int watchproto_parse(const char *line, struct watch_msg *m);

/* Whether s is a host name a node may give: letters, digits, '.', '-',
 * '_', 1 to WATCH_HOST_MAX - 1 bytes. */
bool watchproto_host_ok(const char *s);

/* Lines from a stream as they come: the caller reads into buf + len (at
 * most sizeof(buf) - len bytes) and adds to len, then takes lines. */
struct watch_reader {
	char buf[WATCH_LINE_MAX];
	size_t len;
};
/* The next whole line (NUL-terminated, its '\n' taken off) into line
 * (WATCH_LINE_MAX bytes): 1, 0 when none is whole yet, -1 when a line is
 * longer than WATCH_LINE_MAX - 1 bytes or holds a byte that is not
 * printable ASCII. */
int watch_reader_next(struct watch_reader *r, char *line);

#endif
