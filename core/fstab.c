/* fstab.c - fstab lines for enroot (see fstab.h). */
#include "fstab.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

int fstab_escape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; *in != '\0'; in++) {
		const char *rep = NULL;
		size_t n = 1;

		switch (*in) {
		case ' ':
			rep = "\\040";
			break;
		case '\t':
			rep = "\\011";
			break;
		case '\n':
			rep = "\\012";
			break;
		case '\\':
			rep = "\\134";
			break;
		}
		if (rep != NULL)
			n = 4;
		if (o + n + 1 > size)
			return -1;
		if (rep != NULL)
			memcpy(out + o, rep, 4);
		else
			out[o] = *in;
		o += n;
	}
	out[o] = '\0';
	return 0;
}

int fstab_line(struct strv *lines, const char *src, const char *dst, const char *opts)
{
	return fstab_line_fs(lines, src, dst, "none", opts);
}

int fstab_line_fs(struct strv *lines, const char *src, const char *dst, const char *type,
		  const char *opts)
{
	char s[4 * PATH_MAX + 1], d[4 * PATH_MAX + 1];

	if (strchr(src, '\n') != NULL || strchr(dst, '\n') != NULL) {
		errno = EINVAL;
		return -1;
	}
	if (fstab_escape(src, s, sizeof(s)) < 0 || fstab_escape(dst, d, sizeof(d)) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (strlen(s) + strlen(d) + strlen(type) + strlen(opts) + sizeof("   ") + 2 >
	    FSTAB_LINE_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return strv_pushf(lines, "%s %s %s %s", s, d, type, opts);
}
