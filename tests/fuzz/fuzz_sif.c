/* fuzz_sif.c - libFuzzer target for the SIF reader (images/unpack/sif.c).
 *
 * Build and run (about a minute):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Icore -Iimages \
 *     tests/fuzz/fuzz_sif.c images/unpack/sif.c core/err.c -o build/fuzz_sif
 *   mkdir -p build/fuzz-sif-corpus && build/fuzz_sif -max_total_time=60 -max_len=65536 \
 *     build/fuzz-sif-corpus
 * The target also checks the parser's promise: a partition it returns lies
 * inside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unpack/sif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sif_partition p;
	struct err e = { 0 };

	/* Most random inputs die at the magic: put it in half of the time so the
	 * fuzzer spends its effort on the header and descriptor fields. */
	if (size >= SIF_HDR_SIZE && (data[0] & 1)) {
		uint8_t *copy = malloc(size);

		memcpy(copy, data, size);
		memcpy(copy + 32, SIF_MAGIC, sizeof(SIF_MAGIC));
		memcpy(copy + 42, "01", 3);
		if (sif_parse_buffer(copy, size, &p, &e) == 0 &&
		    (p.offset > size || p.size > size - p.offset))
			abort();
		free(copy);
		return 0;
	}
	if (sif_parse_buffer(data, size, &p, &e) == 0 &&
	    (p.offset > size || p.size > size - p.offset))
		abort();
	return 0;
}
