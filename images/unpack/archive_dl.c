/* archive_dl.c - libarchive's functions, dlopen'd on first use (see archive_dl.h). */
#define ARCHIVE_DL_TABLE
#include "archive_dl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

struct archive_dl archive_dl;

int archive_dl_load(struct err *e)
{
	static bool loaded;
	struct archive_dl t;
	void *h;

	if (loaded)
		return 0;
	/* The soname first: the unversioned link exists only with the -dev package. */
	h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen("libarchive.so", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive.so.13 not found: install libarchive13 "
			       "to unpack docker/OCI archives");
	memset(&t, 0, sizeof(t));
#define ARCHIVE_DL_SYM(name)                                                            \
	t.name = (__typeof__(t.name))dlsym(h, #name);                                   \
	if (t.name == NULL) {                                                           \
		err_set(e, EXIT_CTRUN, "libarchive.so.13: no function %s (too old?)", #name); \
		dlclose(h);                                                             \
		return -1;                                                              \
	}
	ARCHIVE_DL_FUNCS(ARCHIVE_DL_SYM)
#undef ARCHIVE_DL_SYM
	/* Never closed: the pointers are used until exit. */
	archive_dl = t;
	loaded = true;
	return 0;
}
