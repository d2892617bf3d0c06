/* fuzz_ldcache.c - libFuzzer target for the ld.so.cache reader
 * (hooks/ldcache.c): every entry it returns points inside the buffer and
 * ends there. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ldcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hook_ldcache_entry *v = NULL;
	struct err e = { 0 };
	size_t n = 0;
	char *copy = malloc(size + 1);

	memcpy(copy, data, size);
	copy[size] = '\0';
	if (hook_ldcache_parse(copy, size, &v, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++) {
			if (v[i].key < copy || v[i].key >= copy + size || v[i].value < copy ||
			    v[i].value >= copy + size)
				abort();
			if (memchr(v[i].key, '\0', (size_t)(copy + size - v[i].key)) == NULL)
				abort();
		}
		free(v);
	}
	free(copy);
	return 0;
}
