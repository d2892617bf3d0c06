/* main.c - ctrun's entry: load options, work out the topology, dispatch
 * the subcommand, print the one error line and exit with its code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "commands.h"
#include "err.h"
#include "launch.h"
#include "options.h"
#include "topology.h"

extern char **environ;

static int run(struct options *o, struct err *e)
{
	struct topo t;
	int rv = -1;

	if (launch_topology(o, &t, e) < 0)
		goto out;
	if (t.mode == MODE_BATCH) {
		if (o->cmd == CMD_RUN && o->command.n == 0) {
			err_set(e, EXIT_USAGE, "no command given (see ctrun --help)");
			goto out;
		}
		rv = batch_run(o, &t, environ, e);
		goto out;
	}
	if (o->cmd == CMD_ENV) {
		if (launch_prepare(&t, e) < 0 || launch_print_env(o, &t, environ, e) < 0)
			goto out;
		rv = 0;
		goto out;
	}
	rv = launch_local(o, &t, environ, e);
out:
	topo_free(&t);
	return rv;
}

int main(int argc, char **argv)
{
	struct err e = { 0 };
	struct options o;
	int ret, status = EXIT_CTRUN;

	options_init(&o);
	ret = options_load(&o, argc, argv, environ, &e);
	if (ret == 1) {
		status = 0;
		goto out;
	}
	if (ret < 0)
		goto fail;
	switch (o.cmd) {
	case CMD_RUN:
	case CMD_ENV:
		/* `ctrun --image IMG` with nothing to run: a shell in it. */
		if (o.cmd == CMD_RUN && o.image != NULL && o.command.n == 0)
			status = cmd_shell(&o, &e);
		else
			status = run(&o, &e);
		break;
	case CMD_SHELL:
		status = cmd_shell(&o, &e);
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
		status = cmd_worker(&o, &e);
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
