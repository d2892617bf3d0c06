/* entry.h - the image's entrypoint inside the container: which candidate
 * of the spec (record Y, agentspec.h) runs, and a command line through it.
 * Folder runner/agent/ (ctrun-agent). */
#ifndef CTRUN_ENTRY_H
#define CTRUN_ENTRY_H

#include <stdbool.h>

#include "agentspec.h"
#include "strv.h"

/* The first entrypoint candidate that is a regular file, NULL if none;
 * *via_sh when it is to run as `/bin/sh FILE` (enroot's /etc/rc is
 * sourced by a shell and has neither a #! line nor the execute bit). */
const char *entry_find(const struct agent_spec *s, bool *via_sh);
/* A worker's command line into out: through the entrypoint when there is
 * one, or the entrypoint alone when it is the image's default command (F). */
int entry_argv(const struct agent_spec *s, const char *entry, bool via_sh, char *const *argv,
	       struct strv *out);

#endif
