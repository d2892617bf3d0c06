/* options.c - the key table and its three sources: ini files (inih),
 * CTRUN_* variables and the command line (getopt_long). */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envctl.h"
#include "imex.h"
#include "util.h"
#include "runtimes.h"

enum kind { K_STR, K_LONG, K_BOOL, K_ENUM, K_LIST, K_NPROC, K_KV, K_SIZE, K_ENV, K_NNODES, K_HANG };

struct key {
	const char *section; /* ini section */
	const char *name;    /* ini key; CTRUN_<NAME> in the environment */
	const char *flag;    /* long option, NULL = not on the command line */
	enum kind kind;
	size_t off;
	long min, max;       /* K_LONG range */
	const char *const *choices; /* K_ENUM, index stored as long */
};

static const char *const modes[] = { "auto", "standalone", "node", "task", "batch", NULL };
/* The driver table's names (core/runtimes.h). */
#define RUNTIME_NAME(n) #n,
static const char *const runtimes[] = { "auto", CTR_DRIVERS(RUNTIME_NAME) NULL };
static const char *const autobool[] = { "auto", "true", "false", NULL };
static const char *const image_modes[] = { "auto", "mount", "unpack", NULL };
static const char *const stages[] = { "auto", "sbcast", "off", NULL };
static const char *const gpu_sources[] = { "auto", "cdi", "hook", NULL };
static const char *const feeds[] = { "auto", "off", NULL };
static const char *const conflicts[] = { "refuse", "image", NULL };

#define OFF(f) offsetof(struct options, f)
static const struct key keys[] = {
	{ "run", "mode", "mode", K_ENUM, OFF(mode), 0, 0, modes },
	{ "run", "nproc_per_node", "nproc-per-node", K_NPROC, OFF(nproc_per_node), 0, 0, NULL },
	{ "run", "master_addr", "master-addr", K_STR, OFF(master_addr), 0, 0, NULL },
	{ "run", "master_port", "master-port", K_LONG, OFF(master_port), 1, 65535, NULL },
	{ "run", "nnodes", "nnodes", K_NNODES, OFF(nnodes), 1, 1 << 20, NULL },
	{ "run", "node_rank", "node-rank", K_LONG, OFF(node_rank), 0, 1 << 20, NULL },
	{ "run", "max_restarts", "max-restarts", K_LONG, OFF(max_restarts), 0, 1000, NULL },
	{ "run", "spares", "spares", K_LONG, OFF(spares), 0, 1 << 20, NULL },
	{ "run", "hang_timeout", "hang-timeout", K_HANG, OFF(hang_timeout), 0, 1L << 30, NULL },
	{ "run", "health_check", NULL, K_STR, OFF(health_check), 0, 0, NULL },
	{ "run", "health_timeout", NULL, K_LONG, OFF(health_timeout), 1, 86400, NULL },
	{ "run", "kill_timeout", "kill-timeout", K_LONG, OFF(kill_timeout), 0, 3600, NULL },
	{ "run", "gpu_isolation", "gpu-isolation", K_BOOL, OFF(gpu_isolation), 0, 0, NULL },
	{ "run", "python", "python", K_STR, OFF(python), 0, 0, NULL },
	{ "run", "no_python", "no-python", K_BOOL, OFF(no_python), 0, 0, NULL },
	{ "run", "env", "env", K_ENV, OFF(env), 0, 0, NULL },
	{ "run", "env_file", "env-file", K_LIST, OFF(env_files), 0, 0, NULL },
	{ "run", "clean_env", "clean-env", K_BOOL, OFF(clean_env), 0, 0, NULL },
	{ "output", "prefix", NULL, K_ENUM, OFF(prefix_mode), 0, 0, autobool },
	{ "output", "log_dir", "log-dir", K_STR, OFF(log_dir), 0, 0, NULL },
	{ "output", "verbose", NULL, K_LONG, OFF(verbose), 0, 9, NULL },
	{ "output", "quiet", "quiet", K_BOOL, OFF(quiet), 0, 0, NULL },
	{ "output", "timings", "timings", K_BOOL, OFF(timings), 0, 0, NULL },
	{ "container", "image", "image", K_STR, OFF(image), 0, 0, NULL },
	{ "container", "runtime", "runtime", K_ENUM, OFF(runtime), 0, 0, runtimes },
	{ "container", "image_mode", "image-mode", K_ENUM, OFF(image_mode), 0, 0, image_modes },
	{ "container", "stage", "stage", K_ENUM, OFF(stage), 0, 0, stages },
	{ "container", "workdir", "workdir", K_STR, OFF(workdir), 0, 0, NULL },
	{ "container", "mount", "mount", K_LIST, OFF(mounts), 0, 0, NULL },
	{ "container", "nv", "nv", K_ENUM, OFF(nv), 0, 0, autobool },
	{ "container", "entrypoint", "entrypoint", K_BOOL, OFF(entrypoint), 0, 0, NULL },
	{ "container", "root", "root", K_BOOL, OFF(root), 0, 0, NULL },
	{ "container", "no_home", "no-home", K_BOOL, OFF(no_home), 0, 0, NULL },
	{ "container", "writable", "writable", K_BOOL, OFF(writable), 0, 0, NULL },
	{ "container", "name", "name", K_STR, OFF(name), 0, 0, NULL },
	{ "container", "name_reset", "name-reset", K_BOOL, OFF(name_reset), 0, 0, NULL },
	{ "container", "save", "save", K_STR, OFF(save), 0, 0, NULL },
	{ "container", "unshare", "unshare", K_STR, OFF(unshare), 0, 0, NULL },
	{ "container", "device", "device", K_LIST, OFF(devices), 0, 0, NULL },
	{ "container", "cdi_spec_dirs", NULL, K_STR, OFF(cdi_spec_dirs), 0, 0, NULL },
	{ "gpu", "source", NULL, K_ENUM, OFF(gpu_source), 0, 0, gpu_sources },
	{ "gpu", "imex_channels", NULL, K_STR, OFF(imex_channels), 0, 0, NULL },
	{ "fabric", "rdma", NULL, K_ENUM, OFF(rdma), 0, 0, autobool },
	{ "fabric", "libraries", NULL, K_LIST, OFF(fabric_libs), 0, 0, NULL },
	{ "fabric", "lib_dirs", NULL, K_LIST, OFF(fabric_dirs), 0, 0, NULL },
	{ "fabric", "net_env", NULL, K_KV, OFF(fabric_env), 0, 0, NULL },
	{ "fabric", "devices", NULL, K_LIST, OFF(fabric_devices), 0, 0, NULL },
	{ "fabric", "on_conflict", NULL, K_ENUM, OFF(fabric_conflict), 0, 0, conflicts },
	{ "check", "json", "json", K_BOOL, OFF(json), 0, 0, NULL },
	{ "check", "rdzv_timeout", "rdzv-timeout", K_LONG, OFF(rdzv_timeout), 1, 86400, NULL },
	{ "cache", "dir", NULL, K_STR, OFF(cache_dir), 0, 0, NULL },
	{ "cache", "shared", NULL, K_STR, OFF(cache_shared), 0, 0, NULL },
	{ "cache", "stage_dir", NULL, K_STR, OFF(stage_dir), 0, 0, NULL },
	{ "cache", "budget", NULL, K_SIZE, OFF(cache_budget), 0, 0, NULL },
	{ "cache", "max_unpacked", NULL, K_SIZE, OFF(cache_max_unpacked), 0, 0, NULL },
	{ "cache", "progress", NULL, K_ENUM, OFF(cache_progress), 0, 0, autobool },
	{ "cache", "compression", NULL, K_STR, OFF(cache_compression), 0, 0, NULL },
	{ "registry", "store", NULL, K_STR, OFF(reg_store), 0, 0, NULL },
	{ "registry", "ca_file", NULL, K_STR, OFF(reg_ca_file), 0, 0, NULL },
	{ "registry", "auth_file", NULL, K_STR, OFF(reg_auth_file), 0, 0, NULL },
	{ "registry", "plain_http", NULL, K_LIST, OFF(reg_plain_http), 0, 0, NULL },
	{ "registry", "insecure_tls", NULL, K_LIST, OFF(reg_insecure_tls), 0, 0, NULL },
	{ "registry", "mirror", NULL, K_KV, OFF(reg_mirrors), 0, 0, NULL },
	{ "registry", "parallel", NULL, K_LONG, OFF(reg_parallel), 1, 16, NULL },
	{ "registry", "store_shared", NULL, K_ENUM, OFF(reg_store_shared), 0, 0, autobool },
	{ "registry", "wait", NULL, K_LONG, OFF(reg_wait), 1, 7 * 86400, NULL },
	{ "registry", "compression", NULL, K_STR, OFF(reg_compression), 0, 0, NULL },
	{ "registry", "reuse", NULL, K_ENUM, OFF(reg_reuse), 0, 0, autobool },
	{ "registry", "max_tree", NULL, K_SIZE, OFF(reg_max_tree), 0, 0, NULL },
	{ "registry", "feed", NULL, K_ENUM, OFF(reg_feed), 0, 0, feeds },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void options_init(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = MODE_AUTO;
	o->nnodes = -1;
	o->nnodes_min = -1;
	o->nnodes_max = -1;
	o->node_rank = -1;
	o->health_timeout = 60;
	o->kill_timeout = 3;
	o->prefix = true;
	o->rdzv_timeout = 60;
	o->reg_parallel = 4;
	o->reg_wait = 1800;
	/* About 3x the largest common training image (NGC PyTorch, ~20 GB
	 * unpacked): see docs/decisions/images-and-cache.md. */
	o->cache_max_unpacked = 64ULL << 30;
	/* About 5x what the tree of the largest common image takes: see
	 * docs/decisions/images-and-cache.md. */
	o->reg_max_tree = 1ULL << 30;
}

static void free_str(char **p)
{
	free(*p);
	*p = NULL;
}

void options_free(struct options *o)
{
	free_str(&o->nproc_per_node);
	free_str(&o->master_addr);
	free_str(&o->python);
	free_str(&o->health_check);
	free_str(&o->log_dir);
	free_str(&o->image);
	free_str(&o->name);
	free_str(&o->save);
	free_str(&o->unshare);
	free_str(&o->cdi_spec_dirs);
	free_str(&o->gpu_source);
	strv_free(&o->devices);
	free_str(&o->runtime);
	free_str(&o->workdir);
	free_str(&o->nv);
	free_str(&o->imex_channels);
	free_str(&o->rdma);
	free_str(&o->fabric_conflict);
	strv_free(&o->fabric_libs);
	strv_free(&o->fabric_dirs);
	strv_free(&o->fabric_env);
	strv_free(&o->fabric_devices);
	free_str(&o->cache_dir);
	free_str(&o->image_mode);
	free_str(&o->prefix_mode);
	free_str(&o->stage);
	free_str(&o->stage_dir);
	free_str(&o->cache_shared);
	free_str(&o->cache_progress);
	free_str(&o->cache_compression);
	free_str(&o->reg_compression);
	free_str(&o->reg_reuse);
	free_str(&o->reg_feed);
	free_str(&o->reg_store);
	free_str(&o->reg_ca_file);
	free_str(&o->reg_auth_file);
	free_str(&o->reg_store_shared);
	strv_free(&o->reg_plain_http);
	strv_free(&o->reg_insecure_tls);
	strv_free(&o->reg_mirrors);
	strv_free(&o->mounts);
	strv_free(&o->env);
	strv_free(&o->env_files);
	strv_free(&o->command);
	strv_free(&o->args);
}

const char *mode_name(long mode)
{
	return mode >= 0 && mode <= MODE_BATCH ? modes[mode] : "?";
}

static const struct key *find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0 &&
		    (section == NULL || strcmp(keys[i].section, section) == 0))
			return &keys[i];
	return NULL;
}

/* --nnodes N, or MIN:MAX as torchrun's (an elastic count: batch mode). */
static int set_nnodes(struct options *o, const struct key *k, const char *value,
		      const char *where, struct err *e)
{
	const char *colon = strchr(value, ':');
	char min[32];
	long lo, hi;

	if (colon == NULL) {
		if (parse_long(value, k->min, k->max, &lo) < 0)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not a node count N or MIN:MAX "
				       "(numbers in %ld..%ld)", where, value, k->min, k->max);
		o->nnodes = o->nnodes_min = o->nnodes_max = lo;
		return 0;
	}
	if (xsnprintf(min, sizeof(min), "%.*s", (int)(colon - value), value) < 0 ||
	    parse_long(min, k->min, k->max, &lo) < 0 || parse_long(colon + 1, k->min, k->max, &hi) < 0)
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a node count N or MIN:MAX "
			       "(numbers in %ld..%ld)", where, value, k->min, k->max);
	if (lo > hi)
		return err_set(e, EXIT_USAGE, "%s: '%s' is reversed: MIN %ld is above MAX %ld "
			       "(write %ld:%ld)", where, value, lo, hi, hi, lo);
	o->nnodes_min = lo;
	o->nnodes_max = hi;
	o->nnodes = lo == hi ? lo : -1;
	return 0;
}

/* --hang-timeout SEC, or SEC:FIRST (the bound before a worker's first progress). */
static int set_hang(struct options *o, const struct key *k, const char *value,
		    const char *where, struct err *e)
{
	const char *colon = strchr(value, ':');
	char sec[32];
	long s, f = 0;

	if (xsnprintf(sec, sizeof(sec), "%.*s", colon != NULL ? (int)(colon - value) : 31,
		      value) < 0 || parse_long(sec, k->min, k->max, &s) < 0 ||
	    (colon != NULL && parse_long(colon + 1, 1, k->max, &f) < 0))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not SEC or SEC:FIRST (seconds, 0 = "
			       "off)", where, value);
	o->hang_timeout = s;
	o->hang_first = f;
	return 0;
}

long options_hang_first(const struct options *o)
{
	if (o->hang_timeout <= 0)
		return 0;
	if (o->hang_first > 0)
		return o->hang_first;
	return o->hang_timeout > HANG_FIRST_MIN ? o->hang_timeout : HANG_FIRST_MIN;
}

static int set_key(struct options *o, const struct key *k, const char *value,
		   const char *where, struct err *e)
{
	char *base = (char *)o + k->off;
	long v;
	bool b;

	switch (k->kind) {
	case K_STR:
		if (*value == '\0')
			return err_set(e, EXIT_USAGE, "%s: empty value", where);
		/* Checked where it is set, so the message names the file and
		 * line (ctrun-hook reads it with the same parser). */
		if (k->off == OFF(imex_channels)) {
			struct imex_req req;

			if (imex_parse(value, where, &req, e) < 0)
				return -1;
		}
		free(*(char **)base);
		*(char **)base = strdup(value);
		break;
	case K_LONG:
		if (parse_long(value, k->min, k->max, &v) < 0)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not a number in %ld..%ld",
				       where, value, k->min, k->max);
		*(long *)base = v;
		break;
	case K_BOOL:
		if (parse_bool(value, &b) < 0)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not a boolean (true/false)",
				       where, value);
		*(bool *)base = b;
		break;
	case K_ENUM:
		for (v = 0; k->choices[v] != NULL; v++)
			if (strcmp(k->choices[v], value) == 0)
				break;
		if (k->choices[v] == NULL || (k->choices == modes && v == MODE_BATCH)) {
			char list[256] = "";

			for (size_t i = 0; k->choices[i] != NULL; i++)
				if (!(k->choices == modes && i == MODE_BATCH))
					snprintf(list + strlen(list), sizeof(list) - strlen(list),
						 "%s%s", list[0] ? ", " : "", k->choices[i]);
			return err_set(e, EXIT_USAGE, "%s: unknown value '%s' (use one of: %s)", where,
				       value, list);
		}
		if (k->choices == modes) {
			*(long *)base = v;
		} else {
			free(*(char **)base);
			*(char **)base = strdup(value);
		}
		break;
	case K_NPROC:
		if (strcmp(value, "auto") != 0 && strcmp(value, "gpu") != 0 &&
		    parse_long(value, 1, 4096, &v) < 0)
			return err_set(e, EXIT_USAGE,
				       "%s: '%s' is not auto, gpu or a number in 1..4096", where, value);
		free(*(char **)base);
		*(char **)base = strdup(value);
		break;
	case K_NNODES:
		return set_nnodes(o, k, value, where, e);
	case K_HANG:
		return set_hang(o, k, value, where, e);
	case K_SIZE:
		if (parse_size(value, (unsigned long long *)(void *)base) < 0)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not a size (bytes, or with "
				       "K, M, G, T)", where, value);
		return 0;
	case K_ENV: /* KEY=VALUE, or KEY: the host's value (envctl.h) */
		if (envctl_check(value, where, e) < 0)
			return -1;
		if (strv_push((struct strv *)(void *)base, value) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", where);
		return 0;
	case K_KV:
		if (strchr(value, '=') == NULL || value[0] == '=')
			return err_set(e, EXIT_USAGE, "%s: '%s' is not KEY=VALUE", where, value);
		/* fall through */
	case K_LIST:
		if (*value == '\0')
			return err_set(e, EXIT_USAGE, "%s: empty value", where);
		if (strv_push((struct strv *)(void *)base, value) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", where);
		return 0;
	}
	if ((k->kind == K_STR || k->kind == K_NPROC || k->kind == K_ENUM) &&
	    k->choices != modes && *(char **)base == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", where);
	return 0;
}

int options_set(struct options *o, const char *key, const char *value,
		const char *where, struct err *e)
{
	const struct key *k = find_key(NULL, key);

	if (k == NULL)
		return err_set(e, EXIT_USAGE, "%s: unknown key '%s' (every key: man ctrun.ini)", where,
			       key);
	return set_key(o, k, value, where, e);
}

struct ini_ctx {
	struct options *o;
	struct err *e;
	FILE *f;
	int line;        /* lines read so far: the line the handler is called for */
	int failed_line; /* where the handler refused a key, 0 if none */
};

/* fgets for inih that counts lines, so a refused key and a syntax error
 * (inih reports only the first error's line) can be told apart. */
static char *read_counted_line(char *buf, int size, void *stream)
{
	struct ini_ctx *c = stream;
	char *r = fgets(buf, size, c->f);

	if (r != NULL)
		c->line++;
	return r;
}

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *c = user;
	const struct key *k;

	if (c->failed_line != 0)
		return 0;
	k = find_key(section, name);
	if (k == NULL) {
		c->failed_line = c->line;
		if (find_key(NULL, name) != NULL)
			err_set(c->e, EXIT_USAGE, "key '%s' belongs in [%s], not [%s]", name,
				find_key(NULL, name)->section, section);
		else
			err_set(c->e, EXIT_USAGE, "unknown key '%s' in [%s] (every key: man ctrun.ini, "
				"or the reference configs/ctrun.ini)", name, section);
		return 0;
	}
	if (set_key(c->o, k, value, name, c->e) < 0) {
		c->failed_line = c->line;
		return 0;
	}
	return 1;
}

int options_load_file(struct options *o, const char *path, bool optional, struct err *e)
{
	struct ini_ctx c = { .o = o, .e = e };
	int line;

	c.f = fopen(path, "re");
	if (c.f == NULL) {
		if (optional && errno == ENOENT)
			return 0;
		return err_sys(e, EXIT_USAGE, "config %s", path);
	}
	line = ini_parse_stream(read_counted_line, &c, on_ini_key, &c);
	fclose(c.f);
	if (line == 0)
		return 0;
	if (line < 0)
		return err_set(e, EXIT_USAGE, "config %s: cannot read", path);
	if (line != c.failed_line)
		return err_set(e, EXIT_USAGE, "config %s:%d: syntax error (expected [section] or "
			       "key = value)", path, line);
	return err_wrap(e, "config %s:%d", path, line);
}

int options_load_env(struct options *o, char *const *envp, struct err *e)
{
	for (size_t i = 0; i < NKEYS; i++) {
		char var[64];
		size_t len;
		const char *value = NULL;

		/* [cache], [registry], [gpu] and [fabric] keys are
		 * CTRUN_CACHE_DIR, CTRUN_REGISTRY_STORE, CTRUN_GPU_SOURCE,
		 * CTRUN_FABRIC_RDMA etc.: CTRUN_DIR would say nothing. */
		bool prefixed = strcmp(keys[i].section, "cache") == 0 ||
				strcmp(keys[i].section, "registry") == 0 ||
				strcmp(keys[i].section, "gpu") == 0 ||
				strcmp(keys[i].section, "fabric") == 0;

		len = (size_t)xsnprintf(var, sizeof(var), "CTRUN_%s%s%s",
					prefixed ? keys[i].section : "", prefixed ? "_" : "",
					keys[i].name);
		for (size_t j = 0; j < len; j++)
			var[j] = (char)toupper((unsigned char)var[j]);
		for (char *const *p = envp; p != NULL && *p != NULL; p++)
			if (strncmp(*p, var, len) == 0 && (*p)[len] == '=')
				value = *p + len + 1;
		if (value == NULL || *value == '\0')
			continue;
		if (set_key(o, &keys[i], value, var, e) < 0)
			return err_wrap(e, "environment");
	}
	return 0;
}
