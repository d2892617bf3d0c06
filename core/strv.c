/* strv.c - growable NULL-terminated string vectors (see strv.h). */
#include "strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct strv *s)
{
	size_t cap;
	char **v;

	if (s->n + 1 < s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 8;
	v = realloc(s->v, cap * sizeof(*v));
	if (v == NULL)
		return -1;
	s->v = v;
	s->cap = cap;
	return 0;
}

int strv_take(struct strv *s, char *str)
{
	if (str == NULL || grow(s) < 0) {
		free(str);
		errno = ENOMEM;
		return -1;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

int strv_push(struct strv *s, const char *str)
{
	return strv_take(s, strdup(str));
}

int strv_pushn(struct strv *s, const char *str, size_t len)
{
	return strv_take(s, strndup(str, len));
}

int strv_pushf(struct strv *s, const char *fmt, ...)
{
	char *str = NULL;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vasprintf(&str, fmt, ap);
	va_end(ap);
	if (ret < 0)
		return -1;
	return strv_take(s, str);
}

int strv_extend(struct strv *s, char *const *v)
{
	for (; v != NULL && *v != NULL; v++)
		if (strv_push(s, *v) < 0)
			return -1;
	return 0;
}

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

long strv_find(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return (long)i;
	return -1;
}

const char *envp_get(char *const *envp, const char *key)
{
	size_t len = strlen(key);

	for (char *const *p = envp; p != NULL && *p != NULL; p++)
		if (strncmp(*p, key, len) == 0 && (*p)[len] == '=')
			return *p + len + 1;
	return NULL;
}

static long env_index(const struct strv *s, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < s->n; i++)
		if (strncmp(s->v[i], key, klen) == 0 && s->v[i][klen] == '=')
			return (long)i;
	return -1;
}

const char *strv_getenv(const struct strv *s, const char *key)
{
	long i = env_index(s, key);

	return i < 0 ? NULL : s->v[i] + strlen(key) + 1;
}

int strv_setenv(struct strv *s, const char *key, const char *value, int overwrite)
{
	long i = env_index(s, key);
	char *kv = NULL;

	if (i >= 0 && !overwrite)
		return 0;
	if (asprintf(&kv, "%s=%s", key, value) < 0)
		return -1;
	if (i < 0)
		return strv_take(s, kv);
	free(s->v[i]);
	s->v[i] = kv;
	return 0;
}

int strv_unsetenv(struct strv *s, const char *key)
{
	long i = env_index(s, key);

	if (i < 0)
		return 0;
	free(s->v[i]);
	memmove(&s->v[i], &s->v[i + 1], (s->n - (size_t)i) * sizeof(*s->v));
	s->n--;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(struct strv *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp);
}

char **strv_argv(struct strv *s)
{
	static char *empty[] = { NULL };

	return s->v != NULL ? s->v : empty;
}

char *strv_lines(const struct strv *s)
{
	size_t len = 0, o = 0;
	char *text;

	for (size_t i = 0; i < s->n; i++)
		len += strlen(s->v[i]) + 1;
	text = malloc(len + 1);
	if (text == NULL)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		size_t n = strlen(s->v[i]);

		memcpy(text + o, s->v[i], n);
		o += n;
		text[o++] = '\n';
	}
	text[o] = '\0';
	return text;
}

int strv_join(const struct strv *s, char *buf, size_t size)
{
	size_t off = 0;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		int w = snprintf(buf + off, size - off, "%s%s", i ? "," : "", s->v[i]);

		if (w < 0 || (size_t)w >= size - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}
