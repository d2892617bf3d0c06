/* fuzz_agentspec.c - libFuzzer target for the agent's spec parser
 * (runner/agent/agentspec.c), which reads a file inside the container.
 *
 * Build and run (about a minute):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Irunner/agent -Icore \
 *     tests/fuzz/fuzz_agentspec.c runner/agent/agentspec.c core/err.c core/strv.c \
 *     core/util.c core/cpulist.c -o build/fuzz_agentspec
 *   mkdir -p build/fuzz-agentspec-corpus && build/fuzz_agentspec -max_total_time=60 \
 *     -max_len=4096 build/fuzz-agentspec-corpus
 * Also checks the round trip: whatever the parser accepts, formatting it
 * again and parsing that gives the same formatting (a fixed point). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_spec s, t;
	struct err e = { 0 };
	char *a = NULL, *b = NULL;
	size_t na, nb;

	if (agentspec_parse((const char *)data, size, &s, &e) < 0)
		return 0;
	if (agentspec_format(&s, &a, &na, &e) < 0)
		abort();
	if (agentspec_parse(a, na, &t, &e) < 0)
		abort();
	if (agentspec_format(&t, &b, &nb, &e) < 0 || na != nb || memcmp(a, b, na) != 0)
		abort();
	for (size_t i = 0; i < s.n; i++)
		if (s.w[i].argv.n == 0 || s.w[i].argv.v[s.w[i].argv.n] != NULL)
			abort();
	free(a);
	free(b);
	agentspec_free(&s);
	agentspec_free(&t);
	return 0;
}
