/* cli.c - the command line: getopt_long over the key table's flags, the
 * subcommand word, --help and --version, and the layering in options_load. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envctl.h"
#include "options.h"
#include "runtimes.h"
#include "util.h"

/* "|NAME" for each runtime of core/runtimes.h. */
#define RUNTIME_BAR(n) "|" #n
/* One screen; the rest is in ctrun SUBCOMMAND --help and ctrun(1). */
static const char usage[] =
	"Usage: ctrun [OPTIONS] [--] COMMAND [ARG...]   launch COMMAND as this node's workers\n"
	"       ctrun [OPTIONS] env|shell|check         worker variables, container shell, preflight\n"
	"       ctrun [OPTIONS] bench [FLAGS]           bus bandwidth (ctrun bench --help)\n"
	"       ctrun cache|hooks ...                   node cache, GPU hooks (ctrun cache --help)\n"
	"       ctrun pull REF [-o FILE.sqsh]           an image from a registry (ctrun pull --help)\n"
	"       ctrun save NAME -o FILE.sqsh            a named container as an image\n"
	"Launch:\n"
	"  --nproc-per-node N|gpu|auto  --mode auto|node|task|standalone\n"
	"  --master-addr ADDR  --master-port PORT  --nnodes N|MIN:MAX  --node-rank R\n"
	"  --max-restarts N  --spares S  --hang-timeout SEC  --kill-timeout SEC  --gpu-isolation\n"
	"  --env KEY=VALUE|KEY  --env-file FILE  --clean-env\n"
	"  --python PATH  --no-python\n"
	"Output:\n"
	"  --prefix|--no-prefix  --log-dir DIR  --timings  -v  -q  --dry-run  -V, --version\n"
	"Container:\n"
	"  --image IMG|docker://REF  --runtime auto" CTR_DRIVERS(RUNTIME_BAR) "\n"
	"  --nv  --entrypoint  --root  --no-home  --writable  --name NAME [--name-reset]\n"
	"  --save PATH.sqsh  --mount SRC[:DST[:ro]]|tmpfs:DST[:OPTS]|umount:DST  --device VENDOR/CLASS=NAME\n"
	"  --workdir DIR  --stage auto|sbcast|off  --image-mode auto|mount|unpack  --unshare net,ipc,uts\n"
	"Check and bench:  --json  --rdzv-timeout SEC\n"
	"\n"
	"Settings: /etc/ctrun/ctrun.ini, ~/.config/ctrun/ctrun.ini, $CTRUN_CONFIG, CTRUN_<KEY>.\n"
	"Exit status: the first failing worker's; 2 usage or config, 125 ctrun failed,\n"
	"126 not executable, 127 not found.  Every option: man ctrun; settings: man ctrun.ini.\n";

enum { OPT_NO_PREFIX = 1000, OPT_PREFIX, OPT_DRY_RUN, OPT_FLAG_BASE = 2000 };

/* Long options that take a value map to keys with the same name, '-' for '_'.
 * A flag (OPT_FLAG_BASE + 1) sets its key to true, or to the boolean after
 * '=' (`--writable=false`): what a setting's file or CTRUN_* variable made
 * true, the command line can make false again (the SPANK plugin's
 * --container-readonly over a site's `writable = true`). */
static const struct option longopts[] = {
	{ "mode", required_argument, NULL, OPT_FLAG_BASE },
	{ "nproc-per-node", required_argument, NULL, OPT_FLAG_BASE },
	{ "master-addr", required_argument, NULL, OPT_FLAG_BASE },
	{ "master-port", required_argument, NULL, OPT_FLAG_BASE },
	{ "nnodes", required_argument, NULL, OPT_FLAG_BASE },
	{ "node-rank", required_argument, NULL, OPT_FLAG_BASE },
	{ "max-restarts", required_argument, NULL, OPT_FLAG_BASE },
	{ "spares", required_argument, NULL, OPT_FLAG_BASE },
	{ "hang-timeout", required_argument, NULL, OPT_FLAG_BASE },
	{ "kill-timeout", required_argument, NULL, OPT_FLAG_BASE },
	{ "python", required_argument, NULL, OPT_FLAG_BASE },
	{ "env", required_argument, NULL, OPT_FLAG_BASE },
	{ "env-file", required_argument, NULL, OPT_FLAG_BASE },
	{ "clean-env", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "log-dir", required_argument, NULL, OPT_FLAG_BASE },
	{ "image", required_argument, NULL, OPT_FLAG_BASE },
	{ "runtime", required_argument, NULL, OPT_FLAG_BASE },
	{ "image-mode", required_argument, NULL, OPT_FLAG_BASE },
	{ "stage", required_argument, NULL, OPT_FLAG_BASE },
	{ "workdir", required_argument, NULL, OPT_FLAG_BASE },
	{ "mount", required_argument, NULL, OPT_FLAG_BASE },
	{ "nv", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "entrypoint", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "root", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "no-home", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "writable", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "name", required_argument, NULL, OPT_FLAG_BASE },
	{ "name-reset", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "save", required_argument, NULL, OPT_FLAG_BASE },
	{ "unshare", required_argument, NULL, OPT_FLAG_BASE },
	{ "device", required_argument, NULL, OPT_FLAG_BASE },
	{ "gpu-isolation", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "no-python", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "json", optional_argument, NULL, OPT_FLAG_BASE + 1 },
	{ "timings", optional_argument, NULL, OPT_FLAG_BASE + 1 },
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

/* Edit distance (insertions, deletions, substitutions, transpositions of
 * neighbours) between a and b, capped: names are short. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[3][66];

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *row = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			row[j] = best;
		}
	}
	return d[la % 3][lb];
}

/* The long option closest to a mistyped `--word[=value]`, as git and cargo
 * suggest one: within 2 edits (1 for names of 4 letters or fewer), else NULL. */
static const char *closest_option(const char *arg)
{
	char word[65];
	const char *best = NULL;
	size_t best_d = 99;

	if (strncmp(arg, "--", 2) != 0 || xsnprintf(word, sizeof(word), "%.*s",
						     (int)strcspn(arg + 2, "="), arg + 2) < 0)
		return NULL;
	for (const struct option *lo = longopts; lo->name != NULL; lo++) {
		size_t d = distance(word, lo->name);

		if (d < best_d) {
			best_d = d;
			best = lo->name;
		}
	}
	return best_d <= (strlen(word) <= 4 ? 1u : 2u) ? best : NULL;
}

/* Options that only mean something in a container: given on the command
 * line without an image they would be ignored, so they are refused. */
static bool container_only(const char *name)
{
	static const char *const names[] = { "mount", "workdir", "entrypoint", "image-mode", "root",
					     "no-home", "writable", "name", "name-reset", "save",
					     "unshare", "device", NULL };

	for (const char *const *n = names; *n != NULL; n++)
		if (strcmp(name, *n) == 0)
			return true;
	return false;
}

/* One getopt pass from optind; stops at the first non-option word. */
static int parse_flags(struct options *o, int argc, char *const *argv, const char *help,
		       struct err *e)
{
	int c, idx;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hVvq", longopts, &idx)) != -1) {
		char key[64], where[80];

		switch (c) {
		case 'h':
			fputs(help, stdout);
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
			if (options_set(o, key, c == OPT_FLAG_BASE || optarg != NULL ? optarg : "true",
					where, e) < 0)
				return -1;
			if (container_only(longopts[idx].name) && o->container_flag == NULL)
				o->container_flag = longopts[idx].name;
			break;
		case ':':
			return err_set(e, EXIT_USAGE, "option '%s' needs a value (see ctrun --help)",
				       argv[optind - 1]);
		case '?':
		default:
			if (optopt != 0 && optopt < 256)
				return err_set(e, EXIT_USAGE, "unknown option '-%c' (see ctrun --help)",
					       optopt);
			if (closest_option(argv[optind - 1]) != NULL)
				return err_set(e, EXIT_USAGE, "unknown option '%s' (did you mean --%s?)",
					       argv[optind - 1], closest_option(argv[optind - 1]));
			return err_set(e, EXIT_USAGE, "unknown option '%s' (see ctrun --help)",
				       argv[optind - 1]);
		}
	}
	return 0;
}

int options_parse_argv(struct options *o, const struct command *commands, int argc,
		       char *const *argv, struct err *e)
{
	int ret;

	o->cmd = &commands[0];
	for (int i = 1; i < argc; i++)
		if (strv_push(&o->args, argv[i]) < 0)
			return err_sys(e, EXIT_CTRUN, "argv");
	optind = 0; /* full reset: options_parse_argv may run more than once */
	ret = parse_flags(o, argc, argv, usage, e);
	if (ret != 0)
		return ret;
	/* A subcommand word is only recognised before "--": `ctrun -- env` runs env(1). */
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0) {
		for (const struct command *c = commands; c->word != NULL; c++) {
			if (strcmp(argv[optind], c->word) != 0)
				continue;
			o->cmd = c;
			optind++;
			if (c->flags & CMD_OWN_FLAGS)
				break;
			ret = parse_flags(o, argc, argv, c->usage != NULL ? c->usage : usage, e);
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

bool options_cmd_is(const struct options *o, const char *word)
{
	return strcmp(o->cmd != NULL ? o->cmd->word : "run", word) == 0;
}

int options_load(struct options *o, const struct command *commands, int argc,
		 char *const *argv, char *const *envp, struct err *e)
{
	const char *home = NULL, *conf = NULL;
	char path[PATH_MAX];
	int ret;

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
	ret = options_parse_argv(o, commands, argc, argv, e);
	/* The files' entries go under every --env (docker's order), read once
	 * here so a bad file is a usage error before anything starts. */
	if (ret == 0 && o->env_files.n > 0) {
		struct strv env = { 0 };

		for (size_t i = 0; i < o->env_files.n; i++)
			if (envctl_file_load(o->env_files.v[i], &env, e) < 0) {
				strv_free(&env);
				return -1;
			}
		if (strv_extend(&env, o->env.v) < 0) {
			strv_free(&env);
			return err_sys(e, EXIT_CTRUN, "--env-file");
		}
		strv_free(&o->env);
		o->env = env;
	}
	if (ret == 0 && o->container_flag != NULL && o->image == NULL && (o->cmd->flags & CMD_HOST))
		return err_set(e, EXIT_USAGE, "--%s needs --image: without a container the command "
			       "runs on the host and --%s would be ignored", o->container_flag,
			       o->container_flag);
	return ret;
}
