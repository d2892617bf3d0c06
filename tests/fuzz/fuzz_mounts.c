/* fuzz_mounts.c - libFuzzer target for --mount SRC[:DST[:ro|rw]],
 * tmpfs:DST[:OPTS] and umount:DST (runner/container/rt/mounts.c):
 * whatever it accepts has absolute,
 * normalised paths (no empty, "." or ".." component) and parses again to
 * the same thing once written back with its escapes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p)
{
	size_t n = strlen(p);

	if (p[0] != '/' || strstr(p, "//") != NULL || strstr(p, "/./") != NULL ||
	    strstr(p, "/../") != NULL)
		abort();
	if (n > 1 && (p[n - 1] == '/' || (n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
		      (n >= 3 && strcmp(p + n - 3, "/..") == 0)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	struct ctr_mount m = { 0 };
	struct err e = { 0 };

	memcpy(spec, data, size);
	spec[size] = '\0';
	if (mount_parse(spec, "/work/dir", &m, &e) == 0) {
		/* tmpfs:DST[:OPTS] and umount:DST: the source is the word, and a
		 * tmpfs's mount data only the checked words (mounts.c). */
		if (m.kind == CTR_MOUNT_BIND)
			check_path(m.src);
		else if (strcmp(m.src, m.kind == CTR_MOUNT_TMPFS ? "tmpfs" : "umount") != 0 ||
			 (m.kind == CTR_MOUNT_TMPFS &&
			  (m.data == NULL || strspn(m.data, "abcdefghijklmnopqrstuvwxyz_0123456789=,%"
						    "KMGT") != strlen(m.data))) ||
			 (m.kind == CTR_MOUNT_UMOUNT && m.data != NULL))
			abort();
		check_path(m.dst);
		mount_free(&m);
	} else if (strchr(e.msg, '\n') != NULL) {
		abort();
	}
	free(spec);
	return 0;
}
