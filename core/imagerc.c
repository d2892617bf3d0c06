/* imagerc.c - the image's working directory from its /etc/rc (see imagerc.h). */
#include "imagerc.h"

#include <string.h>

static const char cd_word[] = "cd ";
static const char tail[] = " && unset OLDPWD || exit 1";
static const char bare[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./:=,@%";

/* One byte of the directory into out; -1 when it does not fit or is a NUL
 * (no path holds one). */
static int put(char *out, size_t size, size_t *n, char c)
{
	if (*n + 1 >= size || c == '\0')
		return -1;
	out[(*n)++] = c;
	return 0;
}

/* The word at p (before end) into out: returns where it ends, or NULL
 * when it is no word of imagerc.h's three kinds (or does not fit). */
static const char *word(const char *p, const char *end, char *out, size_t size)
{
	size_t n = 0;

	if (p < end && *p == '"') {
		for (p++; p < end && *p != '"'; p++)
			if (*p == '$' || *p == '`' || *p == '\\' || *p == '\n' ||
			    put(out, size, &n, *p) < 0)
				return NULL;
		if (p == end)
			return NULL;
		p++;
	} else if (p < end && *p == '\'') {
		/* 'a'\''b': quoted parts joined by escaped quotes. */
		for (;;) {
			for (p++; p < end && *p != '\''; p++)
				if (put(out, size, &n, *p) < 0)
					return NULL;
			if (p == end)
				return NULL;
			p++;
			if (end - p < 3 || memcmp(p, "\\''", 3) != 0)
				break;
			if (put(out, size, &n, '\'') < 0)
				return NULL;
			p += 2;
		}
	} else {
		for (; p < end && *p != '\0' && strchr(bare, *p) != NULL; p++)
			if (put(out, size, &n, *p) < 0)
				return NULL;
	}
	if (n == 0 || size == 0)
		return NULL;
	out[n] = '\0';
	return p;
}

int imagerc_workdir(const char *text, size_t len, char *out, size_t size)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *q = p, *w;

		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if ((size_t)(end - q) > sizeof(cd_word) - 1 &&
		    memcmp(q, cd_word, sizeof(cd_word) - 1) == 0 &&
		    (w = word(q + sizeof(cd_word) - 1, end, out, size)) != NULL &&
		    (size_t)(end - w) >= sizeof(tail) - 1 && memcmp(w, tail, sizeof(tail) - 1) == 0 &&
		    (w + sizeof(tail) - 1 == end || w[sizeof(tail) - 1] == '\n') && out[0] == '/')
			return 1;
		/* The next line (a quoted directory may have spanned lines:
		 * start again after the line the cd began on). */
		q = memchr(p, '\n', (size_t)(end - p));
		p = q != NULL ? q + 1 : end;
	}
	if (size > 0)
		out[0] = '\0';
	return 0;
}
