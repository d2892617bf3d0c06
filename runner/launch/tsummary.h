/* tsummary.h - the job's start-up timings in one line: every ctrun of the
 * step sends its phases (core/phase.h) to the first one, which prints the
 * slowest node (task mode: task) of each phase and its time.
 *
 * The transport is one UDP datagram per ctrun to MASTER_ADDR:MASTER_PORT
 * (torch's store listens on the TCP port of that number; UDP is a port
 * space of its own).  Text, bounded, tagged with the job and step: a
 * datagram from anyone else, or one that does not parse, is ignored.
 * The tag is public (squeue), so every datagram also ends in an HMAC with
 * the job's timings key (jobkey.h): one without it is ignored too.
 * Only with --timings or -v; nothing here ever fails a run.
 */
#ifndef CTRUN_TSUMMARY_H
#define CTRUN_TSUMMARY_H

#include <stdio.h>

#include "jobkey.h"
#include "phase.h"
#include "topology.h"

#define TSUM_MAGIC "CTRUNTM1"
#define TSUM_DGRAM_MAX 1400

struct tsum_report {
	long rank;              /* RANK of the sender's first worker */
	char host[64];
	size_t n;
	struct {
		char name[32];
		double ms;
	} rows[PHASE_ROWS_MAX];
};

/* The datagram for rows: its length, or -1 when it does not fit. */
int tsum_encode(char *buf, size_t size, const char *tag, long rank, const char *host,
		const struct phase_row *rows, size_t n);
/* 0 and r filled when buf is a report of `tag`, else -1. */
int tsum_decode(const char *buf, size_t len, const char *tag, struct tsum_report *r);
/* Appends the MAC of buf[0..len) with key (size: room in buf); the sealed
 * length, or -1 when it does not fit. */
int tsum_seal(char *buf, size_t len, size_t size, const uint8_t key[JOBKEY_LEN]);
/* The length of the text of a sealed datagram, or -1 when its MAC is not key's. */
int tsum_open(const char *buf, size_t len, const uint8_t key[JOBKEY_LEN]);
/* One line on f: for each phase (in the order first seen: `batch`'s,
 * then own first), the slowest of `own` and reports[0..n) with its host;
 * `expected` ctruns in all, named by `what` ("nodes", "tasks").  batch
 * (NULL: none) holds the phases the batch script's ctrun ran before the
 * step (staging): shown first, counted in no total. */
void tsum_print(FILE *f, const struct tsum_report *batch, const struct tsum_report *own,
		const struct tsum_report *reports, size_t n, long expected, const char *what);

/* Those phases, as batch mode passes them to the step in
 * $CTRUN_BATCH_TIMINGS: "HOST;NAME=MS;NAME=MS" (phase_encode).  0 and r
 * filled (its host: "HOST batch script"), else -1. */
#define TSUM_BATCH_ENV "CTRUN_BATCH_TIMINGS"
int tsum_batch_decode(const char *s, struct tsum_report *r);

/* The first ctrun of a step of several: a socket for the others' reports,
 * else -1 (also when the port is taken: -v says so). */
int tsum_listen(const struct topo *t, int verbose);
/* After this ctrun's own timings line: the first ctrun gathers the others'
 * reports (until all are in, or wait_ms) from fd and prints the summary;
 * every other ctrun sends its report.  Closes fd. */
void tsum_finish(int fd, const struct topo *t, long wait_ms, FILE *f);

#endif
