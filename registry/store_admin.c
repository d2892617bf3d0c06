/* store_admin.c - the image store by hand: list, remove, gc (see store.h).
 * Everything here goes by names the store itself made: a name that is
 * not sha256-<hex>.sqsh or a record that is not a digest is left alone. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rootpath.h"
#include "util.h"

#define TMP_STALE_S (24 * 3600)

/* The walk of refs/ (nftw has no argument: one walk at a time). */
static struct {
	const char *store;
	struct store_image *v;
	size_t n;
	const char *remove; /* a digest whose records go */
	struct trust t;     /* whom the store is trusted from */
} walk;

static int read_record(const char *path, char *digest, size_t size)
{
	char buf[128];
	struct err e = { 0 };
	struct stat st;
	ssize_t n;
	int fd = store_open(path, &walk.t, &st, &e);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!digest_valid(buf))
		return -1;
	snprintf(digest, size, "%s", buf);
	return 0;
}

static int on_ref(const char *path, const struct stat *st, int type, struct FTW *f)
{
	char digest[80], name[PATH_MAX], *key;
	size_t skip = strlen(walk.store) + strlen("/refs/");

	(void)st;
	(void)f;
	if (type != FTW_F || strlen(path) <= skip || read_record(path, digest, sizeof(digest)) < 0)
		return 0;
	if (walk.remove != NULL) {
		if (strcmp(digest, walk.remove) == 0)
			unlink(path);
		return 0;
	}
	/* HOST/REPO/TAG -> HOST/REPO:TAG (or @sha256:... for an index record). */
	snprintf(name, sizeof(name), "%s", path + skip);
	key = strrchr(name, '/');
	if (key == NULL)
		return 0;
	*key = key[1] == '@' ? '@' : ':';
	if (key[1] == '@' && strncmp(key + 2, "sha256-", 7) == 0)
		key[8] = ':';
	for (size_t i = 0; i < walk.n; i++)
		if (strcmp(walk.v[i].digest, digest) == 0) {
			size_t l = strlen(walk.v[i].refs);

			snprintf(walk.v[i].refs + l, sizeof(walk.v[i].refs) - l, "%s%s", l ? " " : "",
				 name);
		}
	return 0;
}

static int walk_refs(const char *store, const struct trust *t, struct store_image *v, size_t n,
		     const char *remove)
{
	char refs[PATH_MAX];

	if (xsnprintf(refs, sizeof(refs), "%s/refs", store) < 0)
		return -1;
	walk.store = store;
	walk.v = v;
	walk.n = n;
	walk.remove = remove;
	walk.t = *t;
	if (nftw(refs, on_ref, 16, FTW_PHYS) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int store_images(const char *store, struct store_image **out, size_t *n, struct err *e)
{
	char dir[PATH_MAX], p[PATH_MAX];
	struct store_image *v = NULL;
	struct dirent *d;
	struct trust t;
	DIR *dh;
	int r;

	*out = NULL;
	*n = 0;
	r = store_trust(store, &t, e);
	if (r <= 0)
		return r;
	if (xsnprintf(dir, sizeof(dir), "%s/images", store) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	dh = opendir(dir);
	if (dh == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", dir);
	while ((d = readdir(dh)) != NULL) {
		size_t len = strlen(d->d_name);
		struct store_image *nv;
		struct stat st;

		if (len != 7 + 64 + 5 || strncmp(d->d_name, "sha256-", 7) != 0 ||
		    strcmp(d->d_name + len - 5, ".sqsh") != 0)
			continue;
		if (xsnprintf(p, sizeof(p), "%s/%s", dir, d->d_name) < 0 || lstat(p, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		nv = realloc(v, (*n + 1) * sizeof(*v));
		if (nv == NULL) {
			closedir(dh);
			free(v);
			return err_sys(e, EXIT_CTRUN, "image store");
		}
		v = nv;
		memset(&v[*n], 0, sizeof(v[*n]));
		snprintf(v[*n].digest, sizeof(v[*n].digest), "sha256:%.64s", d->d_name + 7);
		v[*n].bytes = (unsigned long long)st.st_size;
		v[*n].last_use = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime;
		(*n)++;
	}
	closedir(dh);
	walk_refs(store, &t, v, *n, NULL);
	*out = v;
	return 0;
}

int store_remove(const char *store, const char *what, struct err *e)
{
	char digest[80], path[PATH_MAX];
	struct image_ref r;
	struct trust t;
	int found = store_trust(store, &t, e);

	if (found <= 0)
		return found;
	if (digest_valid(what)) {
		snprintf(digest, sizeof(digest), "%s", what);
	} else {
		if (ref_parse(what, &r, e) < 0)
			return -1;
		found = store_ref_read(store, &r, digest, sizeof(digest), e);
		if (found <= 0)
			return found;
	}
	if (store_image(store, digest, path, sizeof(path), e) < 0)
		return -1;
	walk_refs(store, &t, NULL, 0, digest);
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", path);
	/* Its layer list (reuse.h) goes with it. */
	strcpy(path + strlen(path) - 5, ".layers");
	unlink(path);
	return 1;
}

static unsigned long long tree_bytes;
static int on_size(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)path;
	(void)f;
	if (type == FTW_F)
		tree_bytes += (unsigned long long)st->st_blocks * 512;
	return 0;
}

/* Removes what is in dir (a folder of the store: it stays, with its owner
 * and mode, so a group's store stays every member's), only what is older
 * than min_age seconds; *freed gets the bytes. */
static int empty_folder(const char *dir, long long min_age, unsigned long long *freed,
			struct err *e)
{
	time_t now = time(NULL);
	struct dirent *d;
	DIR *dh = opendir(dir);

	if (dh == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", dir);
	while ((d = readdir(dh)) != NULL) {
		char f[PATH_MAX];
		struct stat st;

		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0 ||
		    xsnprintf(f, sizeof(f), "%s/%s", dir, d->d_name) < 0 || lstat(f, &st) < 0 ||
		    now - st.st_mtime < min_age)
			continue;
		tree_bytes = 0;
		nftw(f, on_size, 16, FTW_PHYS);
		if (remove_tree(f) == 0)
			*freed += tree_bytes;
	}
	closedir(dh);
	return 0;
}

int store_gc(const char *store, unsigned long long *freed, struct err *e)
{
	char p[PATH_MAX];
	struct trust t;
	int r;

	*freed = 0;
	r = store_trust(store, &t, e);
	if (r <= 0)
		return r;
	if (xsnprintf(p, sizeof(p), "%s/blobs/sha256", store) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	if (empty_folder(p, 0, freed, e) < 0)
		return -1;
	if (xsnprintf(p, sizeof(p), "%s/tmp", store) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	return empty_folder(p, TMP_STALE_S, freed, e);
}
