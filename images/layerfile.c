/* layerfile.c - layers and config given as files (see layerfile.h). */
#include "layerfile.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_dl.h"
#include "imgconfig.h"
#include "mlayer.h"

#define BLOCK 65536

int layerfile_apply(int fd, size_t idx, const char *what, struct sqimage *s,
		    struct unpack_limit *l, struct err *e)
{
	struct archive *a;
	unsigned char head[16];
	char name[512];
	ssize_t n;
	int rv = -1;

	snprintf(name, sizeof(name), "layer %zu (%s)", idx + 1, what);
	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", name);
	n = pread(fd, head, sizeof(head), 0);
	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "%s", name);
	if (archive_filter_check(head, (size_t)n, name, e) < 0)
		return -1;
	a = archive_read_new();
	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	archive_filters_enable(a);
	archive_read_support_format_tar(a);
	if (lseek(fd, 0, SEEK_SET) < 0)
		err_sys(e, EXIT_CTRUN, "%s", name);
	else if (archive_read_open_fd(a, fd, BLOCK) != ARCHIVE_OK)
		err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
	else
		rv = mlayer_apply(a, s, name, l, e);
	archive_read_free(a);
	return rv;
}

/* The config's bytes, never more than LAYERFILE_CONFIG_MAX of them read:
 * its size is checked first, and the read stops one byte past the bound. */
static char *read_config(int fd, const char *what, size_t *len, struct err *e)
{
	size_t cap = LAYERFILE_CONFIG_MAX + 1, n = 0;
	struct stat st;
	char *buf;
	ssize_t r;

	if (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)LAYERFILE_CONFIG_MAX) {
		err_set(e, EXIT_CTRUN, "%s: %s", what, S_ISREG(st.st_mode) ? "larger than 16 MiB" :
			"not a regular file");
		return NULL;
	}
	if ((size_t)st.st_size + 1 < cap)
		cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (buf == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", what);
		return NULL;
	}
	while (n < cap && (r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			err_sys(e, EXIT_CTRUN, "%s", what);
			free(buf);
			return NULL;
		}
		n += (size_t)r;
	}
	if (n > LAYERFILE_CONFIG_MAX) { /* grew since the fstat */
		err_set(e, EXIT_CTRUN, "%s: larger than 16 MiB", what);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int layerfile_config(int fd, struct sqimage *s, struct err *e)
{
	struct imgconfig c;
	json_object *j;
	char *text;
	size_t len;
	int rv;

	text = read_config(fd, "image config", &len, e);
	if (text == NULL)
		return -1;
	j = json_tokener_parse(text);
	free(text);
	if (j == NULL)
		return err_set(e, EXIT_CTRUN, "image config: not JSON");
	rv = imgconfig_parse(j, "image config", &c, e);
	json_object_put(j);
	if (rv < 0)
		return -1;
	rv = mlayer_config(&c, s, e);
	imgconfig_free(&c);
	return rv;
}
