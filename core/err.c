/* err.c - filling struct err (see err.h). */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = code;
	return -1;
}

int err_sys(struct err *e, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t len;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	len = strlen(e->msg);
	snprintf(e->msg + len, sizeof(e->msg) - len, ": %s", strerror(saved));
	e->code = code;
	errno = saved;
	return -1;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	char prefix[512], old[sizeof(e->msg)];
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	snprintf(e->msg, sizeof(e->msg), "%s: %s", prefix, old);
	return -1;
}
