/* fuzz_spank.c - libFuzzer target for the SPANK plugin's parsers
 * (spank/spoptions.c, spank/spmounts.c, spank/sprunning.c): option values
 * as srun hands them over (the first byte picks the option and the flag),
 * then the ctrun command line they make; and running-container records
 * read back from a file a user may have written.  Every error is one line, a record that parses
 * formats to bytes that parse again, nothing is read past the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spconf.h"
#include "spoptions.h"
#include "sprunning.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_args a;
	struct sp_conf c;
	struct sp_running r;
	struct strv argv = { 0 };
	struct err e = { 0 };
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	sp_args_init(&a);
	if (sp_conf_parse(&c, 0, NULL, &e) < 0)
		abort();
	/* The same value twice, as Slurm may pass it. */
	for (int i = 0; i < 2; i++)
		if (sp_args_set(&a, (enum sp_opt)(data[0] % SP_NOPTS), data[0] / SP_NOPTS % 2, s, &e) <
			    0 &&
		    (strchr(e.msg, '\n') != NULL || e.code == 0))
			abort();
	if (sp_args_check(&a, &e) < 0 && strchr(e.msg, '\n') != NULL)
		abort();
	if (a.image != NULL && sp_args_hold_argv(&a, &c, NULL, NULL, &argv, &e) < 0)
		abort();
	strv_free(&argv);
	sp_args_free(&a);
	if (sp_running_parse((const char *)data, size, &r, &e) == 0) {
		size_t len = 0;
		char *back = sp_running_format(&r, &len);

		sp_running_free(&r);
		if (back == NULL || sp_running_parse(back, len, &r, &e) < 0)
			abort();
		free(back);
		sp_running_free(&r);
	}
	free(s);
	return 0;
}
