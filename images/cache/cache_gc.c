/* cache_gc.c - listing, removing and garbage-collecting node cache entries.
 *
 * Removal takes the entry's use lock exclusively without waiting, so an entry
 * some process still holds (cache_get_rootfs keeps a shared lock while its
 * container runs) is never deleted under it.  The entry is first renamed into
 * trash/ (one atomic step: it stops existing for every other caller), then
 * deleted at leisure; trash left by a killed gc is emptied by the next one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "cache_int.h"
#include "rootpath.h"
#include "util.h"

static bool is_id(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* The disk use of an entry: entries/<id>/bytes, measured on first need (creation
 * does not walk the tree, to keep job start fast) and kept, written by rename so
 * concurrent lists never read half a number.  A read-only cache just measures. */
static unsigned long long entry_bytes(const char *entry)
{
	char path[PATH_MAX], tmp[PATH_MAX], buf[32];
	unsigned long long bytes = 0;
	char *text;
	int fd, n;

	if (xsnprintf(path, sizeof(path), "%s/bytes", entry) < 0)
		return 0;
	text = read_file(path, NULL);
	if (text != NULL) {
		bytes = strtoull(text, NULL, 10);
		free(text);
		if (bytes > 0)
			return bytes;
	}
	if (xsnprintf(tmp, sizeof(tmp), "%s/rootfs", entry) < 0)
		return 0;
	fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	bytes = cache_du(fd) + 4096;
	close(fd);
	n = snprintf(buf, sizeof(buf), "%llu\n", bytes);
	if (xsnprintf(tmp, sizeof(tmp), "%s/bytes.%ld", entry, (long)getpid()) < 0)
		return bytes;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write_all(fd, buf, (size_t)n) == 0 && close(fd) == 0 && rename(tmp, path) == 0)
			return bytes;
		unlink(tmp);
	}
	return bytes;
}

static void read_meta(const char *entry, struct cache_entry *ce)
{
	char path[PATH_MAX];
	json_object *m, *v;

	ce->bytes = entry_bytes(entry);
	if (xsnprintf(path, sizeof(path), "%s/meta.json", entry) < 0)
		return;
	m = json_object_from_file(path);
	if (m == NULL)
		return;
	if (json_object_object_get_ex(m, "image", &v))
		snprintf(ce->image, sizeof(ce->image), "%s", json_object_get_string(v));
	json_object_put(m);
}

static int cmp_last_use(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;

	return (x->last_use > y->last_use) - (x->last_use < y->last_use);
}

int cache_list(const struct cache_cfg *c, struct cache_entry **out, size_t *n, struct err *e)
{
	char dir[PATH_MAX], entry[PATH_MAX], last[PATH_MAX];
	struct cache_entry *v = NULL, *nv;
	struct dirent *de;
	size_t cap = 0;
	struct stat st;
	DIR *d;

	*out = NULL;
	*n = 0;
	if (xsnprintf(dir, sizeof(dir), "%s/entries", c->dir) < 0)
		return err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "cache dir %s", dir);
	while ((de = readdir(d)) != NULL) {
		if (!is_id(de->d_name)) /* temps and anything else are not entries */
			continue;
		if (xsnprintf(entry, sizeof(entry), "%s/%s", dir, de->d_name) < 0 ||
		    xsnprintf(last, sizeof(last), "%s/last-use", entry) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL) {
				free(v);
				closedir(d);
				return err_sys(e, EXIT_CTRUN, "cache list");
			}
			v = nv;
		}
		memset(&v[*n], 0, sizeof(v[*n]));
		snprintf(v[*n].id, sizeof(v[*n].id), "%s", de->d_name);
		read_meta(entry, &v[*n]);
		v[*n].last_use = stat(last, &st) == 0 ? (long long)st.st_mtim.tv_sec : 0;
		(*n)++;
	}
	closedir(d);
	qsort(v, *n, sizeof(*v), cmp_last_use);
	*out = v;
	return 0;
}

/* Trash left by a killed gc or remove: nobody can reach it any more. */
static void empty_trash(const struct cache_cfg *c)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (xsnprintf(dir, sizeof(dir), "%s/trash", c->dir) < 0 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= 0)
			remove_tree(path);
	closedir(d);
}

/* Temps whose creator is gone (its create lock is free), from this host. */
static void remove_stale_temps(const struct cache_cfg *c)
{
	char dir[PATH_MAX], path[PATH_MAX], id[CACHE_ID_MAX], lock[PATH_MAX], host[256], tag[300];
	struct dirent *de;
	DIR *d;

	cache_hostname(host, sizeof(host));
	if (xsnprintf(tag, sizeof(tag), CACHE_TMP_TAG "%s.", host) < 0)
		return;
	if (xsnprintf(dir, sizeof(dir), "%s/entries", c->dir) < 0 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *t = strstr(de->d_name, tag);
		int fd;

		if (t == NULL || (size_t)(t - de->d_name) >= sizeof(id))
			continue;
		memcpy(id, de->d_name, (size_t)(t - de->d_name));
		id[t - de->d_name] = '\0';
		if (cache_path(lock, sizeof(lock), c, "locks", id, ".lock", NULL) < 0 ||
		    xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0)
			continue;
		fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0)
			remove_tree(path);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

int cache_remove(const struct cache_cfg *c, const char *id, bool must_exist, struct err *e)
{
	char entry[PATH_MAX], trash[PATH_MAX];
	int use, rv = -1;

	if (!is_id(id))
		return err_set(e, EXIT_USAGE, "'%s' is not a cache entry id", id);
	if (cache_path(entry, sizeof(entry), c, "entries", id, "", e) < 0)
		return -1;
	if (access(entry, F_OK) < 0) {
		if (!must_exist)
			return 0;
		return err_set(e, EXIT_CTRUN, "no cache entry %s in %s", id, c->dir);
	}
	use = cache_open_use_lock(c, id, e);
	if (use < 0)
		return -1;
	if (flock(use, LOCK_EX | LOCK_NB) < 0) {
		char who[96];

		/* In a shared cache any user can hold it: say who, for the admin. */
		cache_lock_holder(use, who, sizeof(who));
		err_set(e, EXIT_CTRUN, "cache entry %s is in use by a running container (%s holds "
			"its use lock)", id, who);
		goto out;
	}
	if (xsnprintf(trash, sizeof(trash), "%s/trash/%s.%ld", c->dir, id, (long)getpid()) < 0) {
		err_set(e, EXIT_CTRUN, "cache dir %s: path too long", c->dir);
		goto out;
	}
	if (rename(entry, trash) < 0) {
		if (errno == ENOENT && !must_exist)
			rv = 0;
		else
			err_sys(e, EXIT_CTRUN, "removing cache entry %s", id);
		goto out;
	}
	close(use);
	use = -1;
	if (remove_tree(trash) < 0)
		return err_sys(e, EXIT_CTRUN, "removing %s", trash);
	rv = 0;
out:
	if (use >= 0)
		close(use);
	return rv;
}

int cache_gc(const struct cache_cfg *c, unsigned long long budget, unsigned long long *freed,
	     struct err *e)
{
	struct cache_entry *v = NULL;
	unsigned long long total = 0;
	size_t n = 0;
	struct err skip;

	*freed = 0;
	if (cache_root_check(c, e) < 0)
		return -1;
	empty_trash(c);
	remove_stale_temps(c);
	if (cache_list(c, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		total += v[i].bytes;
	/* Oldest last use first; an entry in use is skipped, not waited for. */
	for (size_t i = 0; i < n && total > budget; i++) {
		memset(&skip, 0, sizeof(skip));
		if (cache_remove(c, v[i].id, false, &skip) < 0)
			continue;
		total -= v[i].bytes;
		*freed += v[i].bytes;
	}
	free(v);
	return 0;
}
