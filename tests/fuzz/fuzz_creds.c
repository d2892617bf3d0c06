/* fuzz_creds.c - libFuzzer target for credential files (registry/creds.c, netrc.c):
 * the bytes as enroot's netrc .credentials (up to the first NUL) and as an
 * auth.json body (by length), looked up for a few hosts.  A found entry
 * has its strings inside their buffers and a source; every error is one
 * line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "creds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct cred *c, const struct err *e)
{
	if (r == 1 && (!c->found || memchr(c->user, '\0', sizeof(c->user)) == NULL ||
		       memchr(c->pass, '\0', sizeof(c->pass)) == NULL || c->source[0] == '\0'))
		abort();
	if (r == 0 && c->found)
		abort();
	if (r < 0 && strchr(e->msg, '\n') != NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[][2] = {
		{ "nvcr.io", "nvidia/pytorch" }, { "docker.io", "library/ubuntu" },
		{ "reg.local:5000", "team/app" }, { "auth.docker.io", "" },
	};
	static char *const envp[] = { "HOME=/nonexistent", "NGC_API_KEY=nvapi-x", "A=", NULL };
	char *text = malloc(size + 1), *body = malloc(size > 0 ? size : 1);

	memcpy(text, data, size);
	text[size] = '\0';
	memcpy(body, data, size);
	for (size_t i = 0; i < sizeof(hosts) / sizeof(*hosts); i++) {
		struct cred c;
		struct err e = { 0 };

		check(creds_netrc(text, "creds", hosts[i][0], envp, &c, &e), &c, &e);
		check(creds_authjson(body, size, "auth.json", hosts[i][0], hosts[i][1], &c, &e), &c, &e);
	}
	free(text);
	free(body);
	return 0;
}
