/* cachetest.h - what the node cache's unit tests share: a scratch
 * directory per test, paths in it, image ids.  Header-only (each test_*.c
 * builds alone). */
#ifndef CTRUN_CACHETEST_H
#define CTRUN_CACHETEST_H

#include <stdio.h>
#include <string.h>

#include "cache.h"
#include "rootpath.h"

static char dir[64];
static char path_buf[4][256];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ctrun-test-cache-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static const char *p(int slot, const char *rel)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, rel);
	return path_buf[slot];
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void id_of(const char *path, char *id)
{
	struct err e = { 0 };

	if (cache_identity(path, id, CACHE_ID_MAX, &e) < 0)
		fail_msg("%s", e.msg);
}

static struct cache_cfg cfg(void)
{
	return (struct cache_cfg){ .dir = p(3, "cache"), .quiet = true };
}

#endif
