/* fuzz_elfinfo.c - libFuzzer target for the shared-library reader
 * (core/elfinfo.c) that checks the host's network stack against an image:
 * on any bytes it returns an error or strings that end inside their
 * fields, and the glibc version order is a total order on what it finds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elfinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *copy = malloc(size ? size : 1);
	struct elf_info i;
	struct err e = { 0 };

	memcpy(copy, data, size);
	if (elf_info_parse(copy, size, "fuzz", &i, &e) == 0) {
		if (memchr(i.soname, '\0', sizeof(i.soname)) == NULL ||
		    memchr(i.glibc_needed, '\0', sizeof(i.glibc_needed)) == NULL ||
		    memchr(i.glibc_defined, '\0', sizeof(i.glibc_defined)) == NULL)
			abort();
		if (glibc_version_cmp(i.glibc_needed, i.glibc_needed) != 0 ||
		    glibc_version_cmp(i.glibc_needed, i.glibc_defined) !=
			    -glibc_version_cmp(i.glibc_defined, i.glibc_needed))
			abort();
	} else if (e.msg[0] == '\0' || strchr(e.msg, '\n') != NULL) {
		abort();
	}
	free(copy);
	return 0;
}
