/* fuzz_options.c - libFuzzer target for ctrun's settings (runner/config):
 * the bytes as an ini file (inih) and, line by line, as CTRUN_* variables
 * (--env specs included).  Every error is one line naming its source, and
 * nothing crashes or leaks. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void check(const struct err *e)
{
	if (e->code != 0 && (e->msg[0] == '\0' || strchr(e->msg, '\n') != NULL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct options o;
	struct err e = { 0 };
	char *text = malloc(size + 1), *envp[64], *save = NULL;
	size_t n = 0;
	FILE *f;

	if (path[0] == '\0') {
		int fd;

		snprintf(path, sizeof(path), "%s/ctrun-fuzz-options.XXXXXX",
			 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		close(fd);
	}
	memcpy(text, data, size);
	text[size] = '\0';
	f = fopen(path, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	options_init(&o);
	options_load_file(&o, path, false, &e);
	check(&e);
	options_free(&o);
	/* The same bytes as the environment: "CTRUN_KEY=VALUE" lines. */
	for (char *l = strtok_r(text, "\n", &save); l != NULL && n < 63; l = strtok_r(NULL, "\n", &save))
		envp[n++] = l;
	envp[n] = NULL;
	e = (struct err){ 0 };
	options_init(&o);
	options_load_env(&o, envp, &e);
	check(&e);
	options_free(&o);
	free(text);
	return 0;
}
