/* worker/main.c - build/ctrun-worker: `ctrun __worker check|bench` alone,
 * the workers of `ctrun check` and `ctrun bench` in a container (--image).
 * ctrun needs libinih, libarchive and libjson-c, which an image may lack;
 * this binary needs only the C library (json-c is linked in), so it runs
 * in any glibc image (docs/bench.md).  Same argv and output as ctrun's. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "err.h"

int main(int argc, char **argv)
{
	struct err e = { 0 };
	int status;

	/* The worker reads its job from the environment and its words; none
	 * of ctrun's option layers apply. */
	if (argc < 2 || strcmp(argv[1], "__worker") != 0) {
		fprintf(stderr, "ctrun-worker: usage: ctrun-worker __worker check|bench ARGS... "
			"(started by `ctrun --image IMG check|bench`, not by hand)\n");
		return EXIT_USAGE;
	}
	status = check_worker_main(argv + 2, (size_t)(argc - 2), &e);
	if (status < 0) {
		fprintf(stderr, "ctrun: %s\n", e.msg[0] != '\0' ? e.msg : "unknown error");
		status = e.code != 0 ? e.code : EXIT_CTRUN;
	}
	return status;
}
