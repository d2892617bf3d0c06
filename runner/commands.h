/* commands.h - the subcommands main dispatches to, one file each: the
 * functions of main.c's command table (options.h struct command; docs/
 * architecture.md "Adding a command").
 *
 * runner/ holds main.c and one file per subcommand, over the concern
 * folders (config, slurm, launch, supervise, container, deliver, check,
 * ...).  Each takes the loaded options (o->command holds the words after
 * the subcommand, for those that parse their own flags) and returns
 * ctrun's exit status (>= 0), or -1 with e filled.
 *
 * Folder runner/: main.c and one cmd_*.c per subcommand (run and env,
 * shell, check and bench, cache, hooks, pull, save, hold, version).  May
 * use: every runner/ folder, devices/, registry/, images/, core/ (the
 * GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_COMMANDS_H
#define CTRUN_COMMANDS_H

#include "err.h"
#include "options.h"

/* A node's health check in the batch ctrun's check step (health.h: $CTRUN_BATCH_HEALTH). */
int cmd_health(struct options *o, struct err *e);
int cmd_run(struct options *o, struct err *e);    /* cmd_run.c: run and env */
int cmd_shell(struct options *o, struct err *e);  /* cmd_shell.c */
int cmd_hold(struct options *o, struct err *e);   /* cmd_hold.c: the SPANK plugin's container */
int cmd_check(struct options *o, struct err *e);  /* cmd_check.c */
int cmd_bench(struct options *o, struct err *e);  /* cmd_check.c */
int cmd_cache(struct options *o, struct err *e);  /* cmd_cache.c */
int cmd_hooks(struct options *o, struct err *e);  /* cmd_hooks.c */
int cmd_version(const struct options *o);         /* cmd_version.c: --version */
int cmd_pull(struct options *o, struct err *e);   /* cmd_pull.c */
int cmd_save(struct options *o, struct err *e);   /* cmd_save.c */

#endif
