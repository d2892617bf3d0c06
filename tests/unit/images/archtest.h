/* archtest.h - the fixture of the archive unit tests: a scratch directory
 * with an empty unpack target, a host directory layers try to reach, and
 * the image file's path; helpers to look into the target. */
#ifndef CTRUN_ARCHTEST_H
#define CTRUN_ARCHTEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "imgconfig.h"
#include "image.h"
#include "imgtest.h"
#include "inroot.h"
#include "rootpath.h"
#include "strv.h"
#include "util.h"

struct fx {
	char dir[64];       /* scratch, removed after each test */
	char dest[128];     /* the (empty) unpack target */
	char outside[128];  /* a host directory layers try to reach */
	char image[128];
};

static inline int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/ctrun-test-archive-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->dest, sizeof(f->dest), "%s/dest", f->dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
	snprintf(f->image, sizeof(f->image), "%s/image.tar", f->dir);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static inline char *in(const struct fx *f, const char *rel)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", f->dest, rel);
	return buf[i];
}

static inline int present(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static inline void assert_content(const char *path, const char *want)
{
	char got[256] = "";
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	assert_non_null(fgets(got, sizeof(got), fp));
	fclose(fp);
	assert_string_equal(got, want);
}

#endif
