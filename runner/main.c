/* main.c - ctrun's entry: load options, dispatch the subcommand through
 * the command table, print the one error line and exit with its code. */
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

/* ctrun [OPTIONS] WORD --help of the commands that take ctrun's options
 * (those with their own flags have their own --help). */
static const char usage_env[] =
	"Usage: ctrun [OPTIONS] env [--image IMG [COMMAND]]\n"
	"Prints the variables ctrun would set for each worker of this node (the torchrun\n"
	"contract, its defaults, --gpu-isolation's CUDA_VISIBLE_DEVICES, --env): KEY=VALUE\n"
	"lines sorted by key, one block per worker; with --image each worker's whole\n"
	"environment in the container, the image's included.  Launches no workers; from a\n"
	"batch script it runs on every node through srun.  OPTIONS as for a run.\n";
static const char usage_shell[] =
	"Usage: ctrun [OPTIONS] shell [COMMAND...]\n"
	"An interactive shell (bash if the image has it, else sh), or COMMAND, in the\n"
	"container of --image, with the binds, environment and GPUs a run would get.\n"
	"From an salloc shell or a batch script it runs on the allocation's first node\n"
	"through srun --pty.  Container options: --image IMG  --runtime  --mount  --workdir\n"
	"--nv  --device  --image-mode  --entrypoint  --root  --no-home  --writable  --name\n"
	"--save (ctrun --help).\n";
static const char usage_check[] =
	"Usage: ctrun [OPTIONS] check [--json] [--rdzv-timeout SEC]\n"
	"Run it like the training (same launch, same --nproc-per-node, same --image):\n"
	"prints a table of rank, node, host, GPU, CPUs and NUMA node, checks that every\n"
	"rank reaches MASTER_ADDR:MASTER_PORT and that an all-reduce sums right, and names\n"
	"each misconfiguration found in one line (loopback master, port in use or blocked,\n"
	"wrong interface, world size mismatch, duplicate GPU).  Exit status 0 when all is well.\n";

static int cmd_worker(struct options *o, struct err *e)
{
	return check_worker_main(o->command.v, o->command.n, e);
}

static int cmd_stage(struct options *o, struct err *e)
{
	return stage_node_main(o->command.v, o->command.n, e);
}

/* The subcommands, one row each (options.h struct command; docs/
 * architecture.md "Adding a command"): the word, the function, what is
 * done before it (CMD_*), its --help.  The first row is also what no word
 * means: `ctrun [OPTIONS] COMMAND`. */
static const struct command commands[] = {
	{ "run", cmd_run, CMD_IMAGE | CMD_HOST, NULL },
	{ "env", cmd_run, CMD_HOST, usage_env },
	{ "shell", cmd_shell, CMD_IMAGE, usage_shell },
	{ "check", cmd_check, CMD_IMAGE | CMD_HOST, usage_check },
	{ "bench", cmd_bench, CMD_IMAGE | CMD_HOST | CMD_OWN_FLAGS, NULL },
	{ "cache", cmd_cache, CMD_OWN_FLAGS, NULL },
	{ "hooks", cmd_hooks, CMD_OWN_FLAGS, NULL },
	{ "__worker", cmd_worker, CMD_OWN_FLAGS, NULL },
	{ "__stage", cmd_stage, CMD_OWN_FLAGS, NULL },
	{ "pull", cmd_pull, CMD_OWN_FLAGS, NULL },
	{ "save", cmd_save, CMD_OWN_FLAGS, NULL },
	{ "__hold", cmd_hold, CMD_IMAGE, usage_shell },
	{ NULL, NULL, 0, NULL },
};

int main(int argc, char **argv)
{
	struct err e = { 0 };
	struct options o;
	int ret, status = EXIT_CTRUN;

	phase_mark("exec");
	options_init(&o);
	ret = options_load(&o, commands, argc, argv, environ, &e);
	phase_mark("options");
	if (ret == 1) {
		status = o.show_version ? cmd_version(&o) : 0;
		goto out;
	}
	if (ret < 0)
		goto fail;
	/* The batch ctrun's health check of this node: before any pull. */
	if (options_cmd_is(&o, "run") && getenv(HEALTH_ENV) != NULL &&
	    strcmp(getenv(HEALTH_ENV), "1") == 0) {
		status = cmd_health(&o, &e);
		if (status < 0)
			goto fail;
		goto out;
	}
	if ((o.cmd->flags & CMD_IMAGE) && image_resolve(&o, &e) < 0)
		goto fail;
	status = o.cmd->fn(&o, &e);
	if (status >= 0)
		goto out;
fail:
	fprintf(stderr, "ctrun: %s\n", e.msg[0] != '\0' ? e.msg : "unknown error");
	status = e.code != 0 ? e.code : EXIT_CTRUN;
out:
	options_free(&o);
	return status;
}
