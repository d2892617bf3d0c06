/* feed_step.h - a node's part in its step's image feed (feed.h): node 0
 * pulls and sends down the chain, node k receives from node k-1 and
 * forwards to node k+1 (docs/images.md, "A job pulls once"). */
#ifndef CTRUN_FEED_STEP_H
#define CTRUN_FEED_STEP_H

#include <stdbool.h>

#include "err.h"
#include "jobkey.h"
#include "registry.h"

struct feed_step {
	long nodeid, nnodes;
	char job[64];              /* JOB.STEP */
	char host[64];             /* this node, for messages */
	char up[64], down[64];     /* node k-1's and k+1's names ("" none) */
	long port;
	uint8_t key[JOBKEY_LEN];
};

/* The feed's TCP port for a job step: like MASTER_PORT (topology.h) in
 * [10000, 32000), half the range away from it. */
long feed_port(unsigned long job, unsigned long step);

/* Whether this ctrun (a node's first task, node-local store) takes part:
 * 1 with f filled (a step on 2 or more nodes, the job's key at hand), 0
 * not (then it pulls for itself, as before; -v says why). */
int feed_step_of(char *const *envp, long verbose, struct feed_step *f);

/* Node 0: pulls (registry_pull) and sends the result down.  Node k:
 * receives the image into store and publishes it, writes the node's job
 * record (c->job) for its other tasks: 0 with p filled.  1: the feed
 * failed (one line said why): the caller pulls `digest` from the registry
 * itself, or the reference when digest is "". */
int feed_image(const struct feed_step *f, const struct registry_cfg *c, const char *store,
	       const char *image, struct pulled *p, char *digest, size_t dsize, struct err *e);

#endif
