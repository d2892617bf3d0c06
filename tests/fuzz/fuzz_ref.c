/* fuzz_ref.c - libFuzzer target for image references (registry/ref.c): an
 * accepted reference has a host, a repo, a tag or a digest, and the text
 * ref_format writes parses back to the same host, repo, tag and digest
 * (USER@ is not written); every error is one line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), text[1024];
	struct image_ref a, b;
	struct err e = { 0 };

	memcpy(s, data, size);
	s[size] = '\0';
	if (ref_parse(s, &a, &e) < 0) {
		if (strchr(e.msg, '\n') != NULL || e.code != EXIT_USAGE)
			abort();
		free(s);
		return 0;
	}
	if (a.host[0] == '\0' || a.repo[0] == '\0' || (a.tag[0] == '\0' && a.digest[0] == '\0'))
		abort();
	if (ref_format(&a, text, sizeof(text)) < 0)
		abort();
	if (ref_parse(text, &b, &e) < 0 || strcmp(a.host, b.host) != 0 ||
	    strcmp(a.repo, b.repo) != 0 || strcmp(a.tag, b.tag) != 0 ||
	    strcmp(a.digest, b.digest) != 0 || b.user[0] != '\0')
		abort();
	free(s);
	return 0;
}
