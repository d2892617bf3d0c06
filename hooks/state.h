/* state.h - what an OCI runtime tells a hook: the state JSON on stdin and
 * the bundle's config.json.
 *
 * Both parsers are pure (bytes in, struct or error out) so unit tests and
 * fuzzers call them directly; hook_config_load adds the one read of
 * BUNDLE/config.json.  Anything a hostile or broken runtime could hand us
 * (relative or dotted bundle paths, wrong JSON types, trailing garbage) is
 * refused here, before the hook touches a mount. */
#ifndef CTRUN_HOOK_STATE_H
#define CTRUN_HOOK_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "strv.h"

/* ctrun's annotations (ctrun's OCI adapter sets them; hooks.d `when` keys on
 * the first). */
#define HOOK_ANN_ENABLED "org.ctrun.enabled" /* "true": run the hook */
#define HOOK_ANN_GPUS "org.ctrun.gpus"       /* host GPU ids, comma-separated */
#define HOOK_ANN_MODE "org.ctrun.gpu-mode"   /* "node" or "task" (default: from Slurm) */
#define HOOK_ANN_IMEX "org.ctrun.imex-channels" /* IMEX channels: "all", "none", "0,1" */

#define HOOK_STATE_MAX (1u << 20)   /* bytes of state JSON we accept */
#define HOOK_CONFIG_MAX (16u << 20) /* bytes of config.json we accept */

struct hook_state {
	char *oci_version;
	char *id;
	char *status;
	char *bundle; /* absolute, no "." or ".." components */
	long pid;     /* 0 when absent */
};

struct hook_config {
	char *root;           /* absolute host path of the container's rootfs */
	bool readonly;        /* root.readonly */
	struct strv env;      /* process.env, KEY=VALUE */
	char *ann_gpus;       /* org.ctrun.gpus, NULL when absent */
	char *ann_mode;       /* org.ctrun.gpu-mode, NULL when absent */
	char *ann_imex;       /* org.ctrun.imex-channels, NULL when absent */
	bool enabled;         /* org.ctrun.enabled == "true" */
};

int hook_state_parse(const char *buf, size_t len, struct hook_state *s, struct err *e);
void hook_state_free(struct hook_state *s);

/* `bundle` is the state's (already checked) bundle path; root.path may be
 * relative to it. */
int hook_config_parse(const char *buf, size_t len, const char *bundle, struct hook_config *c,
		      struct err *e);
int hook_config_load(const char *bundle, struct hook_config *c, struct err *e);
void hook_config_free(struct hook_config *c);

/* An absolute path with no empty, "." or ".." component (a trailing '/'
 * is allowed): what the hook accepts for every path it is given. */
bool hook_path_is_clean(const char *p);

#endif
