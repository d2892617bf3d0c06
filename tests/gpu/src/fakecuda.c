/* fakecuda.c - a libcuda.so.1 with no driver API at all that says where it was
 * loaded from.  In images/shipslibcuda.sqsh it is the image's own
 * /usr/lib/x86_64-linux-gnu/libcuda.so.999.99 (checklist item 5): if the CUDA
 * program in the container loads it, cudart fails (no driver entry points); if
 * it loads the host's driver, it runs.  fakegpu.sh uses it as a fake host driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int gpukit_fake_libcuda(void)
{
	return 999;
}

__attribute__((constructor)) static void said(void)
{
	Dl_info i;

	if (dladdr((void *)gpukit_fake_libcuda, &i) != 0 && i.dli_fname != NULL)
		fprintf(stderr, "fakecuda: a fake libcuda was loaded: %s\n", i.dli_fname);
	else
		fprintf(stderr, "fakecuda: a fake libcuda was loaded\n");
}
