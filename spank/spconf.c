/* spconf.c - plugstack.conf arguments (spconf.h). */
#include <stdio.h>
#include <string.h>

#include "spconf.h"

#ifndef SPANK_CTRUN
#define SPANK_CTRUN "/usr/local/bin/ctrun"
#endif

static int parse_bool(const char *key, const char *v, bool *out, struct err *e)
{
	if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 ||
	    strcmp(v, "y") == 0)
		*out = true;
	else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "no") == 0 ||
		 strcmp(v, "n") == 0)
		*out = false;
	else
		return err_set(e, EXIT_USAGE, "plugstack.conf: %s: invalid value: %s (true or false)",
			       key, v);
	return 0;
}

int sp_conf_parse(struct sp_conf *c, int ac, char *const *av, struct err *e)
{
	static const char *const pyxis_only[] = { "runtime_path", "use_enroot_load", "importer",
						  "use_squashfuse", NULL };

	memset(c, 0, sizeof(*c));
	snprintf(c->ctrun, sizeof(c->ctrun), "%s", SPANK_CTRUN);
	c->sbatch_support = true;
	c->torchrun_env = true;
	c->workdir_image = true;
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '='), *v;
		size_t klen = eq != NULL ? (size_t)(eq - av[i]) : strlen(av[i]);
		char key[32];
		bool ignored = false;

		if (eq == NULL || klen >= sizeof(key))
			return err_set(e, EXIT_USAGE, "plugstack.conf: unknown argument: %s (KEY=VALUE: "
				       "ctrun, runtime, execute_entrypoint, container_scope, "
				       "sbatch_support, torchrun_env, default_workdir)", av[i]);
		memcpy(key, av[i], klen);
		key[klen] = '\0';
		v = eq + 1;
		for (const char *const *p = pyxis_only; *p != NULL; p++)
			ignored |= strcmp(key, *p) == 0;
		if (ignored)
			continue;
		if (strcmp(key, "ctrun") == 0) {
			if (v[0] != '/' || strlen(v) >= sizeof(c->ctrun))
				return err_set(e, EXIT_USAGE, "plugstack.conf: ctrun=%s: an absolute "
					       "path to the ctrun binary", v);
			snprintf(c->ctrun, sizeof(c->ctrun), "%s", v);
		} else if (strcmp(key, "runtime") == 0) {
			if (*v == '\0' || strlen(v) >= sizeof(c->runtime))
				return err_set(e, EXIT_USAGE, "plugstack.conf: runtime=%s: a runtime "
					       "name (ctrun --runtime)", v);
			snprintf(c->runtime, sizeof(c->runtime), "%s", v);
		} else if (strcmp(key, "execute_entrypoint") == 0) {
			if (parse_bool(key, v, &c->execute_entrypoint, e) < 0)
				return -1;
		} else if (strcmp(key, "sbatch_support") == 0) {
			if (parse_bool(key, v, &c->sbatch_support, e) < 0)
				return -1;
		} else if (strcmp(key, "torchrun_env") == 0) {
			if (parse_bool(key, v, &c->torchrun_env, e) < 0)
				return -1;
		} else if (strcmp(key, "default_workdir") == 0) {
			if (strcmp(v, "image") != 0 && strcmp(v, "srun") != 0)
				return err_set(e, EXIT_USAGE, "plugstack.conf: default_workdir: invalid "
					       "value: %s (image or srun)", v);
			c->workdir_image = strcmp(v, "image") == 0;
		} else if (strcmp(key, "container_scope") == 0) {
			if (strcmp(v, "job") != 0 && strcmp(v, "global") != 0)
				return err_set(e, EXIT_USAGE, "plugstack.conf: container_scope: invalid "
					       "value: %s (job or global)", v);
			c->scope_job = strcmp(v, "job") == 0;
		} else {
			return err_set(e, EXIT_USAGE, "plugstack.conf: unknown argument: %s (KEY=VALUE: "
				       "ctrun, runtime, execute_entrypoint, container_scope, "
				       "sbatch_support, torchrun_env, default_workdir)", av[i]);
		}
	}
	return 0;
}
