/* cmd_version.c - `ctrun --version`: the version, and which of the parts
 * loaded or run at run time this machine has (libslurm, libarchive, the
 * CUDA runtime, NCCL, the container runtimes, with the release of apptainer
 * or singularity, whose arguments depend on it). */
#include <stdio.h>

#include "unpack/archive_dl.h"
#include "coll_nccl.h"
#include "commands.h"
#include "drivers.h"
#include "gpu.h"
#include "runtime.h"
#include "slurmlib.h"

/* Each binary of the driver table once, in its order (oci's runc and crun
 * before crun's crun), with the release where the driver reads it. */
static void runtimes(void)
{
	struct strv seen = { 0 };

	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL; d++) {
		for (const char *const *b = (*d)->bins; *b != NULL; b++) {
			char path[4096], name[64];

			if (strv_find(&seen, *b) >= 0 || strv_push(&seen, *b) < 0)
				continue;
			if (!ctr_which(*b, path, sizeof(path))) {
				printf("  %-13s not found on PATH\n", *b);
				continue;
			}
			if ((*d)->version == NULL) {
				printf("  %-13s %s\n", *b, path);
				continue;
			}
			(*d)->version(path, name, sizeof(name));
			printf("  %-13s %s (%s)\n", *b, path, name);
		}
	}
	strv_free(&seen);
}

int cmd_version(const struct options *o)
{
	char buf[4096], why[512] = "";
	struct err e = { 0 };

	(void)o;
	printf("ctrun %s\n", CTRUN_VERSION);
	slurmlib_describe(buf, sizeof(buf));
	printf("  libslurm      %s\n", buf);
	if (archive_dl_load(&e) == 0)
		printf("  libarchive    loaded (docker/OCI archives)\n");
	else
		printf("  libarchive    not found: %s\n", e.msg);
	if (cudart_load(why, sizeof(why)) != NULL)
		printf("  CUDA runtime  loaded\n");
	else
		printf("  CUDA runtime  not usable: %s\n", why);
	why[0] = '\0';
	if (nccl_usable(why, sizeof(why)) == 0)
		printf("  NCCL          %s\n", nccl_version());
	else
		printf("  NCCL          not usable: %s\n", why);
	runtimes();
	return fflush(stdout) == 0 ? 0 : EXIT_CTRUN;
}
