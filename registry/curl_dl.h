/* curl_dl.h - libcurl, loaded at run time (dlopen) on first use, as
 * images/unpack/archive_dl.h does for libarchive: a plain run of ctrun never maps
 * libcurl and its TLS stack.  The call sites keep libcurl's names; each one
 * used is #defined to the pointer in the table (curl.h is included first
 * for its types, with its gcc type-checking macros off: they would call
 * the functions by their real names). */
#ifndef CTRUN_CURL_DL_H
#define CTRUN_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "err.h"

#define CURL_DL_FUNCS(X)                                                                  \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_setopt)     \
	X(curl_easy_perform) X(curl_easy_getinfo) X(curl_easy_strerror) X(curl_slist_append) \
	X(curl_slist_free_all) X(curl_easy_escape) X(curl_free)

struct curl_dl {
#define CURL_DL_FIELD(name) __typeof__(name) *name;
	CURL_DL_FUNCS(CURL_DL_FIELD)
#undef CURL_DL_FIELD
};

extern struct curl_dl curl_dl;

/* Loads libcurl.so.4 and calls curl_global_init once (not thread-safe:
 * call before starting download threads).  Errors name the package. */
int curl_dl_load(struct err *e);

#ifndef CURL_DL_TABLE
/* curl.h's own pass-through macros for these two. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init curl_dl.curl_global_init
#define curl_easy_init curl_dl.curl_easy_init
#define curl_easy_cleanup curl_dl.curl_easy_cleanup
#define curl_easy_setopt curl_dl.curl_easy_setopt
#define curl_easy_perform curl_dl.curl_easy_perform
#define curl_easy_getinfo curl_dl.curl_easy_getinfo
#define curl_easy_strerror curl_dl.curl_easy_strerror
#define curl_slist_append curl_dl.curl_slist_append
#define curl_slist_free_all curl_dl.curl_slist_free_all
#define curl_easy_escape curl_dl.curl_easy_escape
#define curl_free curl_dl.curl_free
#endif

#endif
