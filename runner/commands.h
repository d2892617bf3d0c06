/* commands.h - the subcommands main dispatches to, one file each.
 *
 * Each takes the loaded options (o->command holds the words after the
 * subcommand, for those that parse their own flags) and returns ctrun's
 * exit status (>= 0), or -1 with e filled. */
#ifndef CTRUN_COMMANDS_H
#define CTRUN_COMMANDS_H

#include "err.h"
#include "options.h"

int cmd_shell(struct options *o, struct err *e);  /* runner/shell.c */
int cmd_check(struct options *o, struct err *e);  /* runner/check_launch.c */
int cmd_bench(struct options *o, struct err *e);  /* runner/check_launch.c */
int cmd_cache(struct options *o, struct err *e);  /* runner/cache_cmd.c */
int cmd_hooks(struct options *o, struct err *e);  /* runner/hooks_cmd.c */
/* Internal: a worker process of `check`/`bench` (argv after the word). */
int cmd_worker(struct options *o, struct err *e); /* runner/check.c */

#endif
