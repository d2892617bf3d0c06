/* fuzz_mig.c - libFuzzer target for what ctrun-hook reads of the driver
 * for MIG and IMEX (hooks/mig.c, core/imex.c): /proc/devices' majors,
 * mig-minors, a MIG id, an IMEX request, the params rewrite.  The first
 * byte picks the reader. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imex.h"
#include "mig.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hook_mig_minors m;
	char *text;
	struct err e = { 0 };
	struct imex_req x;
	long maj;

	if (size == 0)
		return 0;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		maj = hook_chardev_major(text, "nvidia-caps");
		if (maj == 0 || maj >= 4096)
			abort();
		break;
	case 1:
		if (hook_mig_minors_parse(text, &m, &e) == 0 && m.n > HOOK_MIG_MINORS_MAX)
			abort();
		break;
	case 2:
		(void)hook_is_mig_id(text);
		break;
	case 3:
		if (imex_parse(text, "fuzz", &x, &e) == 0 && (x.n > IMEX_REQ_MAX || (x.all && x.n)))
			abort();
		for (size_t i = 0; i < x.n; i++)
			if (x.ids[i] < 0 || x.ids[i] > IMEX_CHANNEL_MAX)
				abort();
		break;
	default: {
		size_t before = strlen(text);

		hook_procfs_params(text);
		if (strlen(text) != before)
			abort();
	}
	}
	free(text);
	return 0;
}
