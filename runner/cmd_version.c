/* cmd_version.c - `ctrun --version`: the version, and which of the parts
 * loaded or run at run time this machine has (libslurm, libarchive, the
 * CUDA runtime, NCCL, the container runtimes, with the release of apptainer
 * or singularity, whose arguments depend on it). */
#include <stdio.h>

#include "archive_dl.h"
#include "coll_nccl.h"
#include "commands.h"
#include "gpu.h"
#include "runtime.h"
#include "slurmlib.h"

int cmd_version(const struct options *o)
{
	static const char *const runtimes[] = { "enroot", "apptainer", "singularity", "runc",
						"crun", NULL };
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
	for (const char *const *r = runtimes; *r != NULL; r++) {
		char path[4096], name[64];

		if (!ctr_which(*r, path, sizeof(path))) {
			printf("  %-13s not found on PATH\n", *r);
			continue;
		}
		if (r[0][0] == 'a' || r[0][0] == 's') {
			struct app_version v;

			ctr_app_version(path, &v);
			printf("  %-13s %s (%s)\n", *r, path, app_version_name(&v, name, sizeof(name)));
		} else {
			printf("  %-13s %s\n", *r, path);
		}
	}
	return fflush(stdout) == 0 ? 0 : EXIT_CTRUN;
}
