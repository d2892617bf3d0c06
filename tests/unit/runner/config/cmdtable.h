/* cmdtable.h - the unit tests' command table (options.h struct command),
 * rows as runner/main.c's: the command line's parsing is tested over it. */
#ifndef CTRUN_TEST_CMDTABLE_H
#define CTRUN_TEST_CMDTABLE_H

#include "options.h"

/* A command table as runner/main.c's (its functions are not called here). */
static const struct command commands[] = {
	{ "run", NULL, CMD_IMAGE | CMD_HOST, NULL },
	{ "env", NULL, CMD_HOST, "env's usage\n" },
	{ "shell", NULL, CMD_IMAGE, NULL },
	{ "check", NULL, CMD_IMAGE | CMD_HOST, NULL },
	{ "bench", NULL, CMD_IMAGE | CMD_HOST | CMD_OWN_FLAGS, NULL },
	{ NULL, NULL, 0, NULL },
};

#endif
