/* fuzz_imgconfig.c - libFuzzer target for a docker/OCI image config
 * (images/imgconfig.c): the JSON's Env as /etc/environment, read back the
 * way the runtime adapters read it (image_environ_read) must give exactly
 * the variables the config had, byte for byte. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgconfig.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	struct imgconfig c = { 0 };
	struct strv env = { 0 };
	struct err e = { 0 };
	json_object *j;

	if (root[0] == '\0') {
		snprintf(root, sizeof(root), "%s/ctrun-fuzz-imgconfig.XXXXXX",
			 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
		if (mkdtemp(root) == NULL)
			abort();
	}
	j = json_tokener_parse_ex(tok, (const char *)data, (int)(size > 65536 ? 65536 : size));
	json_tokener_free(tok);
	if (j == NULL)
		return 0;
	if (imgconfig_parse(j, "config", &c, &e) == 0) {
		char *workdir = c.workdir;

		c.workdir = NULL; /* only the environment here */
		if (imgconfig_apply(&c, root, &e) < 0 || image_environ_read(root, &env, &e) < 0)
			abort();
		c.workdir = workdir;
		/* Every KEY=VALUE of the config, the last of each key winning. */
		for (size_t i = 0; i < c.env.n; i++) {
			const char *kv = c.env.v[i], *eq = strchr(kv, '=');
			char key[4096];
			const char *got, *want = eq + 1;

			snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
			for (size_t k = i + 1; k < c.env.n; k++)
				if (strncmp(c.env.v[k], key, strlen(key)) == 0 &&
				    c.env.v[k][strlen(key)] == '=')
					want = NULL;
			got = strv_getenv(&env, key);
			if (want != NULL && (got == NULL || strcmp(got, want) != 0)) {
				fprintf(stderr, "%s: wrote '%s', read '%s'\n", key, want,
					got != NULL ? got : "(none)");
				abort();
			}
		}
	}
	imgconfig_free(&c);
	strv_free(&env);
	json_object_put(j);
	return 0;
}
