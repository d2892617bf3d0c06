/* fuzz_ncclnet.c - libFuzzer target for the reader of NCCL's INFO lines
 * (runner/check/ncclnet.c), which `ctrun check` and `ctrun bench` run on
 * NCCL's log of a rank: every field ends inside it, and the transport is
 * one NCCL names or empty. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ncclnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENDS(f) (memchr((f), '\0', sizeof(f)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	struct ncclnet n;

	memset(&n, 0x41, sizeof(n));
	memcpy(copy, data, size);
	ncclnet_parse(copy, size, &n);
	if (!ENDS(n.net) || !ENDS(n.transport) || !ENDS(n.plugin) || !ENDS(n.plugin_err) || !n.read)
		abort();
	if ((n.net[0] == '\0') != (n.transport[0] == '\0'))
		abort();
	free(copy);
	return 0;
}
