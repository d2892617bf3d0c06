/* jobkey.h - the secret that tells the processes of one job from everyone
 * else on the network: the rendezvous of `ctrun check` and `ctrun bench`
 * (runner/net/) and the --timings gather (runner/launch/tsummary.c) accept
 * only peers that prove they know it.  The job string (SLURM_JOB_ID.step)
 * is public (squeue), so it names a job but proves nothing.
 *
 * Where the secret comes from (docs/bench.md, "Who may join"):
 *   1. CTRUN_JOB_SECRET (64 hex digits) when set: a batch-mode ctrun sets a
 *      fresh random one for its srun, so a job's nodes agree without a
 *      shared $HOME (a process's environment is readable by its user and
 *      root only);
 *   2. else the user's key file $XDG_CONFIG_HOME/ctrun/job.key (default
 *      ~/.config/ctrun/job.key): 32 random bytes, mode 0600, created once
 *      by whichever node comes first and read by the others through the
 *      shared file system.
 * A purpose's per-job key is HMAC-SHA256(secret, "ctrun-PURPOSE" NUL job
 * NUL step): a key that leaks from one step (a worker's environment) opens
 * neither another step nor another purpose.
 *
 * Crypto is nettle's (HMAC-SHA256, constant-time compare); randomness is
 * getrandom(2). */
#ifndef CTRUN_JOBKEY_H
#define CTRUN_JOBKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define JOBKEY_LEN 32
#define JOBKEY_HEX_LEN (2 * JOBKEY_LEN)
#define JOBKEY_SECRET_ENV "CTRUN_JOB_SECRET" /* the job's secret, set by batch mode */
#define JOBKEY_RDZV_ENV "CTRUN_RDZV_KEY"     /* the rendezvous key, for check/bench workers */

/* $XDG_CONFIG_HOME/ctrun/job.key, else $HOME/.config/ctrun/job.key. */
int jobkey_path(char *buf, size_t size, struct err *e);
/* Reads the key file at path, creating it first when it is missing
 * (atomically: a private temporary file linked to the name, so of two
 * nodes racing, both read the winner's).  A file that is not a regular
 * file of the caller's with mode 0600 and 32 bytes is refused (EXIT_CTRUN,
 * saying how to fix it). */
int jobkey_file(const char *path, uint8_t key[JOBKEY_LEN], struct err *e);
/* The job's secret: CTRUN_JOB_SECRET from envp if set, else the key file. */
int jobkey_secret(char *const *envp, uint8_t secret[JOBKEY_LEN], struct err *e);
/* A purpose's key for a job and step (either may be NULL: "none"). */
void jobkey_derive(const uint8_t secret[JOBKEY_LEN], const char *purpose, const char *job,
		   const char *step, uint8_t key[JOBKEY_LEN]);

/* HMAC-SHA256 over the concatenation of n (pointer, length) parts. */
struct jobkey_part {
	const void *p;
	size_t len;
};
void jobkey_mac(const uint8_t key[JOBKEY_LEN], const struct jobkey_part *parts, size_t n,
		uint8_t mac[JOBKEY_LEN]);
/* Constant-time comparison of two MACs. */
bool jobkey_equal(const uint8_t a[JOBKEY_LEN], const uint8_t b[JOBKEY_LEN]);
/* JOBKEY_LEN random bytes (getrandom). */
int jobkey_random(uint8_t *buf, size_t len, struct err *e);

/* hex: JOBKEY_HEX_LEN + 1 bytes.  from_hex: 0 when s is exactly 64 hex digits. */
void jobkey_to_hex(const uint8_t key[JOBKEY_LEN], char *hex);
int jobkey_from_hex(const char *s, uint8_t key[JOBKEY_LEN]);

#endif
