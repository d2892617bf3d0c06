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
	ssize_t n;
	int fd, rv = -1;

	snprintf(name, sizeof(name), "layer %zu (%s)", idx + 1, what);
	if (archive_dl_load(e) < 0)
		return err_wrap(e, "%s", name);
	/* One descriptor for the look and the unpack: the blob lies in a store
	 * a group may share, where a FIFO put in its place must not stall us. */
	fd = open_regular(blob, O_RDONLY, NULL);
	if (fd < 0)
		return errno == EINVAL ? err_set(e, EXIT_CTRUN, "%s: %s: not a regular file", name, blob)
				       : err_sys(e, EXIT_CTRUN, "%s: %s", name, blob);
	n = pread(fd, head, sizeof(head), 0);
	if (n < 0) {
		err_sys(e, EXIT_CTRUN, "%s: %s", name, blob);
		goto out;
	}
	if (archive_filter_check(head, (size_t)n, name, e) < 0)
		goto out;
	a = archive_read_new();
	if (a == NULL) {
		err_set(e, EXIT_CTRUN, "libarchive: out of memory");
		goto out;
	}
	archive_filters_enable(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_fd(a, fd, BLOCK) != ARCHIVE_OK)
		err_set(e, EXIT_CTRUN, "%s: %s", name, archive_error_string(a));
	else
		rv = layer_apply(a, dest, name, l, e);
	archive_read_free(a);
out:
	close(fd);
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
