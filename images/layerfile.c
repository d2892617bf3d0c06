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
#include "layer.h"
#include "spawn.h"
#include "util.h"

#define CONFIG_MAX (16u << 20)
#define BLOCK 65536

int layerfile_apply(const char *blob, size_t idx, const char *what, const char *dest,
		    struct unpack_limit *l, struct err *e)
{
	struct archive *a;
	unsigned char head[16];
	char name[512];
	ssize_t n = -1;
	int fd, rv = -1;

	snprintf(name, sizeof(name), "layer %zu (%s)", idx + 1, what);
	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", name);
	fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, head, sizeof(head));
		close(fd);
	}
	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "%s: %s", name, blob);
	if (archive_filter_check(head, (size_t)n, name, e) < 0)
		return -1;
	a = archive_read_new();
	if (a == NULL)
		return err_set(e, EXIT_CTRUN, "libarchive: out of memory");
	archive_filters_enable(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, blob, BLOCK) != ARCHIVE_OK)
		err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
	else
		rv = layer_apply(a, dest, name, l, e);
	archive_read_free(a);
	return rv;
}

int layerfile_config(const char *config, const char *dest, struct err *e)
{
	struct imgconfig c;
	json_object *j;
	char *text;
	size_t len;
	int rv;

	text = read_file(config, &len);
	if (text == NULL)
		return err_sys(e, EXIT_CTRUN, "image config %s", config);
	if (len > CONFIG_MAX) {
		free(text);
		return err_set(e, EXIT_CTRUN, "image config %s: larger than %u bytes", config,
			       CONFIG_MAX);
	}
	j = json_tokener_parse(text);
	free(text);
	if (j == NULL)
		return err_set(e, EXIT_CTRUN, "image config %s: not JSON", config);
	rv = imgconfig_parse(j, "image config", &c, e);
	json_object_put(j);
	if (rv < 0)
		return -1;
	rv = imgconfig_apply(&c, dest, e);
	imgconfig_free(&c);
	return rv;
}

int squashfs_make(const char *dir, const char *out, struct err *e)
{
	/* gzip, which every runtime reads (Singularity 3.4 too), at level 1:
	 * the torch test image (1.4 GB) in 11.6 s and 498 MB here, where the
	 * default level 9 took 91 s for 451 MB (docs/images.md). */
	char *const argv[] = { "mksquashfs", (char *)dir, (char *)out, "-noappend", "-all-root",
			       "-no-xattrs", "-no-progress", "-quiet", "-comp", "gzip",
			       "-Xcompression-level", "1", NULL };
	struct stat st;

	if (lstat(out, &st) == 0 || errno != ENOENT)
		return err_set(e, EXIT_CTRUN, "squashfs %s: exists already", out);
	if (spawn_wait(argv, false, NULL, e) < 0)
		return err_wrap(e, "mksquashfs %s (is squashfs-tools installed?)", out);
	return 0;
}
