/* strv.h - a growable, always NULL-terminated vector of owned strings.
 *
 * Used for argv and envp (exec-ready: v[n] == NULL) and for expanded
 * hostlists.  An empty strv is {0}; strv_free returns it to that state. */
#ifndef CTRUN_STRV_H
#define CTRUN_STRV_H

#include <stddef.h>

struct strv {
	char **v;   /* v[0..n-1] owned strings, v[n] == NULL once non-empty */
	size_t n;
	size_t cap;
};

int strv_push(struct strv *s, const char *str);            /* copies */
int strv_pushn(struct strv *s, const char *str, size_t len); /* copies len bytes */
int strv_pushf(struct strv *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int strv_take(struct strv *s, char *str);                   /* takes ownership */
int strv_extend(struct strv *s, char *const *v);            /* copies a NULL-terminated vector */
void strv_free(struct strv *s);
/* Index of the first element equal to str, or -1. */
long strv_find(const struct strv *s, const char *str);
/* The value of KEY in a NULL-terminated KEY=VALUE vector (environ), or NULL. */
const char *envp_get(char *const *envp, const char *key);
/* Env-style helpers: KEY=VALUE elements. */
const char *strv_getenv(const struct strv *s, const char *key);
int strv_setenv(struct strv *s, const char *key, const char *value, int overwrite);
int strv_unsetenv(struct strv *s, const char *key);
/* The elements as text, each followed by a newline ("" when empty);
 * malloc'd, NULL when out of memory. */
char *strv_lines(const struct strv *s);
/* The elements joined by ',' into buf ("" when empty); -1 when they do
 * not fit. */
int strv_join(const struct strv *s, char *buf, size_t size);
/* Sort elements with strcmp. */
void strv_sort(struct strv *s);
/* Never-NULL view for exec: returns s->v, or a static empty vector. */
char **strv_argv(struct strv *s);

#endif
