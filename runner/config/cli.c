/* cli.c - the command line: getopt_long over the key table's flags, the
 * subcommand word, --help and --version, and the layering in options_load. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "util.h"

static const char usage[] =
	"Usage: ctrun [OPTIONS] [--] COMMAND [ARG...]   launch workers (in or out of Slurm)\n"
	"       ctrun env [OPTIONS]                      print each local worker's environment\n"
	"       ctrun shell|check|bench|cache|hooks ...  see docs/cli.md\n"
	"\n"
	"Launch:\n"
	"  --nproc-per-node N|gpu|auto  workers per node (auto: this task's GPUs, else 1)\n"
	"  --mode auto|node|task|standalone\n"
	"                          node: one Slurm task per node, ctrun starts the workers;\n"
	"                          task: one Slurm task per worker\n"
	"  --master-addr ADDR      rendezvous host (default: first node of the step)\n"
	"  --master-port PORT      (default: derived from the job and step ids)\n"
	"  --nnodes N  --node-rank R   override what Slurm says\n"
	"  --max-restarts N        restart all workers up to N times after a failure\n"
	"  --kill-timeout SEC      SIGTERM to SIGKILL grace period (default 3)\n"
	"  --gpu-isolation         each worker sees only its own GPU\n"
	"  --env KEY=VALUE         extra worker variable (repeatable)\n"
	"  --python PATH           interpreter for COMMAND ending in .py (default python3)\n"
	"  --no-python             run a .py COMMAND directly\n"
	"Output:\n"
	"  --prefix, --no-prefix   [rankN]: on each output line or not (default: from 2 workers)\n"
	"  --log-dir DIR           per-rank logs in DIR/JOBID/HOST/rank-N.log\n"
	"  --timings               print the time of each start-up phase (also with -v)\n"
	"  -v, --verbose  -q, --quiet  --dry-run  -h, --help  -V, --version\n"
	"Container:\n"
	"  --image IMG  --runtime auto|enroot|apptainer|singularity|oci\n"
	"  --mount SRC[:DST[:ro]]  --workdir DIR\n"
	"  --image-mode auto|mount|unpack   start from the mounted squashfs/SIF, or unpack it\n"
	"  --stage auto|sbcast|off  batch mode: copy the image to every node first (sbcast)\n"
	"  --nv                    require GPU passthrough (default: when the node has GPUs)\n"
	"  --entrypoint            run the image's entrypoint before the command\n"
	"Check (ctrun check) and bench:\n"
	"  --json                  machine-readable output\n"
	"  --rdzv-timeout SEC      how long ranks wait for each other (default 60)\n"
	"\n"
	"Settings also come from /etc/ctrun/ctrun.ini, ~/.config/ctrun/ctrun.ini,\n"
	"$CTRUN_CONFIG and CTRUN_<KEY> variables (see configs/ctrun.ini).\n"
	"Exit status: the first failing worker's, 2 usage/config, 125 ctrun failed,\n"
	"126 not executable, 127 command not found.\n";

enum { OPT_NO_PREFIX = 1000, OPT_PREFIX, OPT_DRY_RUN, OPT_FLAG_BASE = 2000 };

/* Long options that take a value map to keys with the same name, '-' for '_'. */
static const struct option longopts[] = {
	{ "mode", required_argument, NULL, OPT_FLAG_BASE },
	{ "nproc-per-node", required_argument, NULL, OPT_FLAG_BASE },
	{ "master-addr", required_argument, NULL, OPT_FLAG_BASE },
	{ "master-port", required_argument, NULL, OPT_FLAG_BASE },
	{ "nnodes", required_argument, NULL, OPT_FLAG_BASE },
	{ "node-rank", required_argument, NULL, OPT_FLAG_BASE },
	{ "max-restarts", required_argument, NULL, OPT_FLAG_BASE },
	{ "kill-timeout", required_argument, NULL, OPT_FLAG_BASE },
	{ "python", required_argument, NULL, OPT_FLAG_BASE },
	{ "env", required_argument, NULL, OPT_FLAG_BASE },
	{ "log-dir", required_argument, NULL, OPT_FLAG_BASE },
	{ "image", required_argument, NULL, OPT_FLAG_BASE },
	{ "runtime", required_argument, NULL, OPT_FLAG_BASE },
	{ "image-mode", required_argument, NULL, OPT_FLAG_BASE },
	{ "stage", required_argument, NULL, OPT_FLAG_BASE },
	{ "workdir", required_argument, NULL, OPT_FLAG_BASE },
	{ "mount", required_argument, NULL, OPT_FLAG_BASE },
	{ "nv", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "entrypoint", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "gpu-isolation", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "no-python", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "json", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "timings", no_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "rdzv-timeout", required_argument, NULL, OPT_FLAG_BASE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "no-prefix", no_argument, NULL, OPT_NO_PREFIX },
	{ "prefix", no_argument, NULL, OPT_PREFIX },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int flag_to_key(const char *flag, char *key, size_t size)
{
	if (xsnprintf(key, size, "%s", flag) < 0)
		return -1;
	for (char *p = key; *p != '\0'; p++)
		if (*p == '-')
			*p = '_';
	return 0;
}

/* One getopt pass from optind; stops at the first non-option word. */
static int parse_flags(struct options *o, int argc, char *const *argv, struct err *e)
{
	int c, idx;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hVvq", longopts, &idx)) != -1) {
		char key[64], where[80];

		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 1;
		case 'V':
			o->show_version = true; /* main prints it, with the parts found */
			return 1;
		case 'v':
			o->verbose++;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_NO_PREFIX:
		case OPT_PREFIX:
			free(o->prefix_mode);
			o->prefix_mode = strdup(c == OPT_PREFIX ? "true" : "false");
			if (o->prefix_mode == NULL)
				return err_sys(e, EXIT_CTRUN, "options");
			o->prefix = c == OPT_PREFIX;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_FLAG_BASE:
		case OPT_FLAG_BASE + 1:
			if (flag_to_key(longopts[idx].name, key, sizeof(key)) < 0)
				return err_set(e, EXIT_USAGE, "option too long");
			snprintf(where, sizeof(where), "--%s", longopts[idx].name);
			if (options_set(o, key, c == OPT_FLAG_BASE ? optarg : "true", where, e) < 0)
				return -1;
			break;
		case ':':
			return err_set(e, EXIT_USAGE, "option '%s' needs a value (see ctrun --help)",
				       argv[optind - 1]);
		case '?':
		default:
			if (optopt != 0 && optopt < 256)
				return err_set(e, EXIT_USAGE, "unknown option '-%c' (see ctrun --help)",
					       optopt);
			return err_set(e, EXIT_USAGE, "unknown option '%s' (see ctrun --help)",
				       argv[optind - 1]);
		}
	}
	return 0;
}

int options_parse_argv(struct options *o, int argc, char *const *argv, struct err *e)
{
	static const char *const words[] = { "run", "env", "shell", "check", "bench", "cache",
					     "hooks", "__worker" };
	int ret;

	for (int i = 1; i < argc; i++)
		if (strv_push(&o->args, argv[i]) < 0)
			return err_sys(e, EXIT_CTRUN, "argv");
	optind = 0; /* full reset: options_parse_argv may run more than once */
	ret = parse_flags(o, argc, argv, e);
	if (ret != 0)
		return ret;
	/* A subcommand word is only recognised before "--": `ctrun -- env` runs env(1). */
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0) {
		for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
			if (strcmp(argv[optind], words[i]) != 0)
				continue;
			o->cmd = (enum subcommand)i;
			optind++;
			/* These parse their own flags from o->command (bench's -b/-e
			 * are not ctrun's); global options go before the word. */
			if (o->cmd == CMD_BENCH || o->cmd == CMD_CACHE || o->cmd == CMD_HOOKS ||
			    o->cmd == CMD_WORKER)
				break;
			ret = parse_flags(o, argc, argv, e);
			if (ret != 0)
				return ret;
			break;
		}
	}
	for (int i = optind; i < argc; i++)
		if (strv_push(&o->command, argv[i]) < 0)
			return err_sys(e, EXIT_CTRUN, "argv");
	return 0;
}

int options_load(struct options *o, int argc, char *const *argv, char *const *envp,
		 struct err *e)
{
	const char *home = NULL, *conf = NULL;
	char path[PATH_MAX];

	for (char *const *p = envp; p != NULL && *p != NULL; p++) {
		if (strncmp(*p, "HOME=", 5) == 0)
			home = *p + 5;
		if (strncmp(*p, "CTRUN_CONFIG=", 13) == 0)
			conf = *p + 13;
	}
	if (options_load_file(o, "/etc/ctrun/ctrun.ini", true, e) < 0)
		return -1;
	if (home != NULL && *home != '\0') {
		if (xsnprintf(path, sizeof(path), "%s/.config/ctrun/ctrun.ini", home) < 0)
			return err_set(e, EXIT_USAGE, "HOME too long");
		if (options_load_file(o, path, true, e) < 0)
			return -1;
	}
	if (conf != NULL && *conf != '\0' && options_load_file(o, conf, false, e) < 0)
		return -1;
	if (options_load_env(o, envp, e) < 0)
		return -1;
	return options_parse_argv(o, argc, argv, e);
}
