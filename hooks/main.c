/* main.c - ctrun-hook's entry: pick the mode, print the one error
 * line, exit non-zero on any failure (a runtime then refuses to start the
 * container, which is the point: a GPU job must not run on the wrong GPUs).
 *
 *   ctrun-hook [--verbose] [createContainer|prestart|createRuntime]
 *   ctrun-hook [--verbose] enroot [--gpus IDS] [--imex CHANNELS]
 *   ctrun-hook driver-files [LIBDIR]   (the driver's files, for apptainer) */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "err.h"
#include "hook.h"

extern char **environ;

static const char usage[] =
	"usage: ctrun-hook [--verbose] [createContainer|prestart|createRuntime]\n"
	"       ctrun-hook [--verbose] enroot [--gpus IDS] [--imex CHANNELS]\n"
	"       ctrun-hook driver-files [LIBDIR]\n"
	"OCI runtime hook (state JSON on stdin) and enroot hook that give a container\n"
	"exactly its GPUs and the host driver's compute libraries. See docs/hooks.md.\n";

int main(int argc, char **argv)
{
	struct err e = { 0 };
	const char *mode = "createContainer", *gpus = NULL, *imex = NULL;
	bool verbose = false;
	int i = 1, rv;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
			verbose = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("ctrun-hook %s\n", CTRUN_VERSION);
			return 0;
		} else {
			fprintf(stderr, "ctrun-hook: unknown option '%s' (see ctrun-hook --help)\n",
				argv[i]);
			return EXIT_USAGE;
		}
	}
	if (i < argc)
		mode = argv[i++];
	if (strcmp(mode, "driver-files") == 0 && i + 1 >= argc) {
		rv = hook_driver_files(i < argc ? argv[i] : "/.singularity.d/libs", stdout, &e);
		goto done;
	}
	/* enroot --gpus IDS --imex CHANNELS: ctrun's choice, written into the
	 * per-run hook script (as the OCI annotations org.ctrun.gpus and
	 * org.ctrun.imex-channels). */
	while (strcmp(mode, "enroot") == 0 && i + 1 < argc &&
	       (strcmp(argv[i], "--gpus") == 0 || strcmp(argv[i], "--imex") == 0)) {
		*(strcmp(argv[i], "--gpus") == 0 ? &gpus : &imex) = argv[i + 1];
		i += 2;
	}
	if (i < argc) {
		fprintf(stderr, "ctrun-hook: unexpected argument '%s' (see ctrun-hook --help)\n",
			argv[i]);
		return EXIT_USAGE;
	}
	if (strcmp(mode, "enroot") == 0)
		rv = hook_enroot_run(environ, gpus, imex, verbose, &e);
	else
		rv = hook_oci_run(mode, verbose, &e);
done:
	if (rv == 0)
		return 0;
	fprintf(stderr, "ctrun-hook: %s\n", e.msg[0] != '\0' ? e.msg : "unknown error");
	return e.code != 0 ? e.code : EXIT_CTRUN;
}
