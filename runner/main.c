/* main.c - ctrun's entry: load options, dispatch the subcommand, print
 * the one error line and exit with its code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "commands.h"
#include "deliver.h"
#include "err.h"
#include "options.h"
#include "phase.h"
#include "health.h"
#include "stage.h"

extern char **environ;

int main(int argc, char **argv)
{
	struct err e = { 0 };
	struct options o;
	int ret, status = EXIT_CTRUN;

	phase_mark("exec");
	options_init(&o);
	ret = options_load(&o, argc, argv, environ, &e);
	phase_mark("options");
	if (ret == 1) {
		status = o.show_version ? cmd_version(&o) : 0;
		goto out;
	}
	if (ret < 0)
		goto fail;
	/* The batch ctrun's health check of this node: before any pull. */
	if (o.cmd == CMD_RUN && getenv(HEALTH_ENV) != NULL && strcmp(getenv(HEALTH_ENV), "1") == 0) {
		status = cmd_health(&o, &e);
		if (status < 0)
			goto fail;
		goto out;
	}
	if ((o.cmd == CMD_RUN || o.cmd == CMD_SHELL || o.cmd == CMD_CHECK || o.cmd == CMD_BENCH ||
	     o.cmd == CMD_HOLD) &&
	    image_resolve(&o, &e) < 0)
		goto fail;
	switch (o.cmd) {
	case CMD_PULL:
		status = cmd_pull(&o, &e);
		break;
	case CMD_SAVE:
		status = cmd_save(&o, &e);
		break;
	case CMD_RUN:
	case CMD_ENV:
		/* `ctrun --image IMG` with nothing to run: a shell in it. */
		if (o.cmd == CMD_RUN && o.image != NULL && o.command.n == 0)
			status = cmd_shell(&o, &e);
		else
			status = cmd_run(&o, &e);
		break;
	case CMD_SHELL:
		status = cmd_shell(&o, &e);
		break;
	case CMD_HOLD:
		status = cmd_hold(&o, &e);
		break;
	case CMD_CHECK:
		status = cmd_check(&o, &e);
		break;
	case CMD_BENCH:
		status = cmd_bench(&o, &e);
		break;
	case CMD_CACHE:
		status = cmd_cache(&o, &e);
		break;
	case CMD_HOOKS:
		status = cmd_hooks(&o, &e);
		break;
	case CMD_WORKER:
		status = check_worker_main(o.command.v, o.command.n, &e);
		break;
	case CMD_STAGE:
		status = stage_node_main(o.command.v, o.command.n, &e);
		break;
	}
	if (status >= 0)
		goto out;
fail:
	fprintf(stderr, "ctrun: %s\n", e.msg[0] != '\0' ? e.msg : "unknown error");
	status = e.code != 0 ? e.code : EXIT_CTRUN;
out:
	options_free(&o);
	return status;
}
