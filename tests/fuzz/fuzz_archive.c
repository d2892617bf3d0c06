/* fuzz_archive.c - libFuzzer target for docker and OCI archives through
 * the real unpack path (images/unpack/archive.c, layer.c: manifests, index,
 * config, tar layer entries, whiteouts, links): whatever the bytes say,
 * nothing is written outside the destination (a sentinel next to it stays
 * as it was, and no other entry appears there), and ctrun does not crash.
 * The first byte picks docker or OCI; the rest is the archive. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "rootpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char box[64], file[128], dest[128], sentinel[128];

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	while (d != NULL && (de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d != NULL)
		closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };
	struct stat st;
	FILE *f;

	if (box[0] == '\0') {
		snprintf(box, sizeof(box), "%s/ctrun-fuzz-archive.XXXXXX",
			 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
		if (mkdtemp(box) == NULL)
			abort();
		snprintf(file, sizeof(file), "%s/image.tar", box);
		snprintf(dest, sizeof(dest), "%s/dest", box);
		snprintf(sentinel, sizeof(sentinel), "%s/sentinel", box);
		f = fopen(sentinel, "w");
		if (f == NULL || fputs("untouched\n", f) < 0 || fclose(f) != 0)
			abort();
	}
	if (size == 0)
		return 0;
	f = fopen(file, "w");
	if (f == NULL || fwrite(data + 1, 1, size - 1, f) != size - 1 || fclose(f) != 0)
		abort();
	if (mkdir(dest, 0700) < 0)
		abort();
	image_unpack(file, (data[0] & 1) ? IMAGE_OCI_ARCHIVE : IMAGE_DOCKER_ARCHIVE, dest, &e);
	if (stat(sentinel, &st) < 0 || st.st_size != 10 || entries(box) != 3)
		abort(); /* something was written, moved or removed outside dest */
	if (remove_tree(dest) < 0)
		abort();
	return 0;
}
