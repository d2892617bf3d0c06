/* fuzz_hookjson.c - libFuzzer target for what ctrun-hook reads from the
 * runtime and the bundle (hooks/state.c): the OCI state JSON on stdin and
 * the bundle's config.json, both from a container it must not trust.  The
 * first byte picks the parser; every accepted result must hold what the
 * hook relies on (clean absolute paths, a pid). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		struct hook_state s = { 0 };

		if (hook_state_parse((const char *)data + 1, size - 1, &s, &e) == 0 &&
		    (s.bundle == NULL || !hook_path_is_clean(s.bundle) || s.pid < 0))
			abort();
		hook_state_free(&s);
	} else {
		struct hook_config c = { 0 };

		if (hook_config_parse((const char *)data + 1, size - 1, "/bundle", &c, &e) == 0 &&
		    (c.root == NULL || !hook_path_is_clean(c.root)))
			abort();
		hook_config_free(&c);
	}
	if (e.msg[sizeof(e.msg) - 1] != '\0' || strchr(e.msg, '\n') != NULL)
		abort(); /* one line, terminated */
	return 0;
}
