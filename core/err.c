/* err.c - filling struct err (see err.h). */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A message is one line whatever it quotes (a path, a spec, a JSON value
 * from an image): control bytes become \n, \t or \xNN. */
static void one_line(struct err *e)
{
	char out[sizeof(e->msg)];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)e->msg; *p != '\0'; p++) {
		char esc[5];
		size_t n;

		if (*p >= 0x20 && *p != 0x7f) {
			esc[0] = (char)*p;
			n = 1;
		} else if (*p == '\n' || *p == '\t') {
			esc[0] = '\\';
			esc[1] = *p == '\n' ? 'n' : 't';
			n = 2;
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			n = 4;
		}
		if (o + n >= sizeof(out))
			break;
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o] = '\0';
	memcpy(e->msg, out, o + 1);
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = code;
	one_line(e);
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
	one_line(e);
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
	one_line(e);
	return -1;
}
