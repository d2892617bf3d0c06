/* sqfs_dl.c - libsquashfs's functions, dlopen'd on first use (see sqfs_dl.h). */
#define SQFS_DL_TABLE
#include "sqfs_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

struct sqfs_dl sqfs_dl;

static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;

int sqfs_dl_load(struct err *e)
{
	static bool loaded;
	struct sqfs_dl t;
	void *h;
	int rv = -1;

	pthread_mutex_lock(&once);
	if (loaded) {
		pthread_mutex_unlock(&once);
		return 0;
	}
	/* The soname first: the unversioned link exists only with the -dev package. */
	h = dlopen("libsquashfs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen("libsquashfs.so", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		err_set(e, EXIT_CTRUN, "libsquashfs.so.1 not found: install libsquashfs1 "
			"(squashfs-tools-ng) to write squashfs images");
		goto out;
	}
	memset(&t, 0, sizeof(t));
#define SQFS_DL_SYM(name)                                                               \
	t.name = (__typeof__(t.name))dlsym(h, #name);                                   \
	if (t.name == NULL) {                                                           \
		err_set(e, EXIT_CTRUN, "libsquashfs.so.1: no function %s (1.1 or later " \
			"needed)", #name);                                              \
		dlclose(h);                                                             \
		goto out;                                                               \
	}
	SQFS_DL_FUNCS(SQFS_DL_SYM)
#undef SQFS_DL_SYM
	/* Never closed: the pointers are used until exit. */
	sqfs_dl = t;
	loaded = true;
	rv = 0;
out:
	pthread_mutex_unlock(&once);
	return rv;
}
