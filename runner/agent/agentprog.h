/* agentprog.h - the agent's side of --hang-timeout (agentspec.h h): the
 * workers' heartbeat files in the container, and each worker's silence
 * sent to ctrun every second (agentproto.h P), which hands it to the batch
 * ctrun's watch or judges it. */
#ifndef CTRUN_AGENTPROG_H
#define CTRUN_AGENTPROG_H

#include <limits.h>
#include <stddef.h>

#include "agentspec.h"
#include "err.h"
#include "strv.h"

struct supervise_opts; /* supervise.h, which the agent's users (spank/) do not see */

struct agentprog {
	char dir[PATH_MAX]; /* "" when the spec asks for none */
	int events_fd;
};

/* With spec h: the heartbeat directory, and each worker's PROGRESS_ENV in
 * envs[i]; so gets the directory and the reporter. */
int agentprog_start(struct agentprog *p, const struct agent_spec *s, struct strv *envs,
		    int events_fd, struct supervise_opts *so, struct err *e);
/* Removes the heartbeat directory. */
void agentprog_end(struct agentprog *p);

#endif
