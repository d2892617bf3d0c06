/* imex.h - a request for NVIDIA IMEX channels (multi-node NVLink's memory
 * export, nvidia-imex): the syntax of nvidia-container-toolkit's
 * NVIDIA_IMEX_CHANNELS, "all", "none" (or "" or "void": none) or a list of
 * channel ids ("0,1" or "channel0"), ids 0..2^20-1 (the toolkit's
 * maxImexChannelID).  Read by one rule for ctrun's [gpu] imex_channels
 * and ctrun-hook (hooks/select.c).  Pure. */
#ifndef CTRUN_IMEX_H
#define CTRUN_IMEX_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define IMEX_CHANNEL_MAX ((1L << 20) - 1)
#define IMEX_REQ_MAX 64

struct imex_req {
	bool all;
	long ids[IMEX_REQ_MAX];
	size_t n;
	const char *source; /* for messages */
};

/* `source` names where spec came from in messages ("[gpu] imex_channels").
 * -1 with e (EXIT_USAGE) for anything else. */
int imex_parse(const char *spec, const char *source, struct imex_req *out, struct err *e);

#endif
