/* worker/main.c - build/ctrun-worker: `ctrun __worker check|bench` alone,
 * the workers of `ctrun check` and `ctrun bench` in a container (--image).
 * ctrun needs libinih, libarchive and libjson-c, which an image may lack;
 * this binary needs only the C library (json-c is linked in), so it runs
 * in any glibc image (docs/bench.md).  Same argv and output as ctrun's. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "options.h"
#include "strv.h"

int main(int argc, char **argv)
{
	struct err e = { 0 };
	struct options o;
	int status = -1;

	/* The worker reads its job from the environment and its words; none
	 * of ctrun's option layers apply. */
	memset(&o, 0, sizeof(o));
	if (argc < 2 || strcmp(argv[1], "__worker") != 0) {
		fprintf(stderr, "ctrun-worker: usage: ctrun-worker __worker check|bench ARGS... "
			"(started by `ctrun --image IMG check|bench`, not by hand)\n");
		return EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++)
		if (strv_push(&o.command, argv[i]) < 0) {
			err_sys(&e, EXIT_CTRUN, "worker argv");
			goto out;
		}
	status = cmd_worker(&o, &e);
out:
	if (status < 0) {
		fprintf(stderr, "ctrun: %s\n", e.msg[0] != '\0' ? e.msg : "unknown error");
		status = e.code != 0 ? e.code : EXIT_CTRUN;
	}
	strv_free(&o.command);
	return status;
}
