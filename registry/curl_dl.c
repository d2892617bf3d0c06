/* curl_dl.c - libcurl's functions, dlopen'd on first use (see curl_dl.h). */
#define CURL_DL_TABLE
#include "curl_dl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

struct curl_dl curl_dl;

int curl_dl_load(struct err *e)
{
	static bool loaded;
	struct curl_dl t;
	void *h;

	if (loaded)
		return 0;
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return err_set(e, EXIT_CTRUN, "libcurl.so.4 not found: install libcurl4 to pull "
			       "images from registries");
	memset(&t, 0, sizeof(t));
#define CURL_DL_SYM(name)                                                              \
	t.name = (__typeof__(t.name))dlsym(h, #name);                                  \
	if (t.name == NULL) {                                                          \
		err_set(e, EXIT_CTRUN, "libcurl.so.4: no function %s (7.84 or later needed)", \
			#name);                                                        \
		dlclose(h);                                                            \
		return -1;                                                             \
	}
	CURL_DL_FUNCS(CURL_DL_SYM)
#undef CURL_DL_SYM
	if (t.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		dlclose(h);
		return err_set(e, EXIT_CTRUN, "libcurl: global initialisation failed");
	}
	curl_dl = t;
	loaded = true;
	return 0;
}
