/* worker.c - `ctrun __worker check|bench ARGS...`: the entry of the
 * workers that `ctrun check` and `ctrun bench` launch, in ctrun itself and
 * in build/ctrun-worker (inside an image). */
#include <string.h>

#include "bench.h"
#include "check.h"

int check_worker_main(char *const *words, size_t nwords, struct err *e)
{
	if (nwords > 0 && strcmp(words[0], "check") == 0)
		return check_worker(words + 1, nwords - 1, e);
	if (nwords > 0 && strcmp(words[0], "bench") == 0)
		return bench_worker(words + 1, nwords - 1, e);
	return err_set(e, EXIT_USAGE, "__worker: expected 'check' or 'bench' (internal command)");
}
