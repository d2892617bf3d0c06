/* cmd_cache.c - `ctrun cache list|create|remove|gc|dir|id`: the node cache by hand.
 *
 *   list                  id, size, last use and image of every entry, least recently used first
 *   create IMAGE...       make sure IMAGE is unpacked in this node's cache; prints the rootfs
 *   remove IMAGE|ID|NAME...  delete entries (refused while a container uses one), or
 *                         named containers (--name NAME)
 *   gc [--budget SIZE]    delete least recently used entries until the cache fits SIZE,
 *                         after the caller's staged copies of ended jobs on this node and
 *                         the named containers whose image is gone or changed
 *   dir                   print the cache directory      id IMAGE   print IMAGE's cache id
 * Run it on a node (srun ... ctrun cache create IMG warms every node's cache).
 * `--shared` after the subcommand acts on the node's shared cache ([cache]
 * shared) instead of the caller's own: root fills it, every user reads it. */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "container.h"
#include "deliver.h"
#include "ref.h"
#include "store.h"
#include "stage.h"
#include "stagedir.h"
#include "util.h"

static const char cache_usage[] =
	"usage: ctrun cache list | create IMAGE... | remove IMAGE|ID|NAME|docker://REF|sha256:DIGEST... | "
	"gc [--budget SIZE] | dir | id IMAGE  (--shared after list, create, remove, gc or dir: the "
	"node's shared cache)";

static void human(unsigned long long b, char *buf, size_t size)
{
	static const char units[] = "BKMGTP";
	double v = (double)b;
	int u = 0;

	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lluB", b);
	else
		snprintf(buf, size, "%.1f%c", v, units[u]);
}

static int do_list(const struct cache_cfg *c, struct err *e)
{
	struct cache_entry *v;
	unsigned long long total = 0;
	size_t n;

	if (cache_list(c, &v, &n, e) < 0)
		return -1;
	printf("%-32s  %8s  %-19s  %s\n", "ID", "SIZE", "LAST USE", "IMAGE");
	for (size_t i = 0; i < n; i++) {
		char size[32], when[32] = "-";
		time_t t = (time_t)v[i].last_use;
		struct tm tm;

		human(v[i].bytes, size, sizeof(size));
		if (t > 0 && localtime_r(&t, &tm) != NULL)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-32s  %8s  %-19s  %s\n", v[i].id, size, when,
		       v[i].image[0] ? v[i].image : "?");
		total += v[i].bytes;
	}
	{
		char t[32];

		human(total, t, sizeof(t));
		printf("%zu entr%s, %s in %s\n", n, n == 1 ? "y" : "ies", t, c->dir);
	}
	free(v);
	return 0;
}

/* The named containers (--name, images/cache/named.h), after the node cache. */
static int list_named(const struct cache_cfg *c, struct err *e)
{
	struct named_entry *v;
	unsigned long long total = 0;
	char size[32], when[32];
	size_t n;

	if (named_list(c, &v, &n, e) < 0)
		return -1;
	if (n == 0) {
		free(v);
		return 0;
	}
	printf("\n%-24s  %8s  %-19s  %s\n", "NAME", "SIZE", "LAST USE", "IMAGE");
	for (size_t i = 0; i < n; i++) {
		time_t t = (time_t)v[i].last_use;
		struct tm tm;

		human(v[i].bytes, size, sizeof(size));
		snprintf(when, sizeof(when), "-");
		if (v[i].in_use)
			snprintf(when, sizeof(when), "in use");
		else if (t > 0 && localtime_r(&t, &tm) != NULL)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-24s  %8s  %-19s  %s\n", v[i].name, size, when, v[i].image);
		total += v[i].bytes;
	}
	human(total, size, sizeof(size));
	printf("%zu named container%s, %s in %s/containers\n", n, n == 1 ? "" : "s", size, c->dir);
	free(v);
	return 0;
}

/* The images pulled from registries (registry/store.h), after the node cache. */
static int list_store(const struct options *o, struct err *e)
{
	struct store_image *v;
	unsigned long long total = 0;
	char store[PATH_MAX], size[32], when[32];
	size_t n;

	if (image_store_dir(o, store, sizeof(store), e) < 0 ||
	    store_images(store, &v, &n, e) < 0)
		return -1;
	if (n == 0)
		return 0;
	printf("\n%-19s  %8s  %-19s  %s\n", "DIGEST", "SIZE", "LAST USE", "PULLED AS");
	for (size_t i = 0; i < n; i++) {
		time_t t = (time_t)v[i].last_use;
		struct tm tm;

		human(v[i].bytes, size, sizeof(size));
		snprintf(when, sizeof(when), "-");
		if (localtime_r(&t, &tm) != NULL)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%.19s  %8s  %-19s  %s\n", v[i].digest, size, when,
		       v[i].refs[0] ? v[i].refs : "-");
		total += v[i].bytes;
	}
	human(total, size, sizeof(size));
	printf("%zu image%s, %s in %s\n", n, n == 1 ? "" : "s", size, store);
	free(v);
	return 0;
}

/* An existing file names an image (its current identity); else an entry id. */
static int remove_one(const struct options *o, const struct cache_cfg *c, const char *arg,
		      struct err *e)
{
	char id[CACHE_ID_MAX], store[PATH_MAX];
	struct stat st;

	/* A named container (--name): by its name, when it has one. */
	if (!c->shared && stat(arg, &st) < 0) {
		struct err ne = { 0 };
		bool found;

		if (named_check_name(arg, &ne) == 0) {
			if (named_remove(c, arg, &found, e) < 0)
				return -1;
			if (found)
				return 0;
		}
	}
	/* A pulled image: by its reference or digest, from the image store. */
	if (!c->shared && (ref_is_reference(arg) || (digest_valid(arg) && stat(arg, &st) < 0))) {
		int r;

		if (image_store_dir(o, store, sizeof(store), e) < 0)
			return -1;
		r = store_remove(store, arg, e);
		if (r == 0)
			return err_set(e, EXIT_CTRUN, "%s: not in the image store %s", arg, store);
		return r < 0 ? -1 : 0;
	}

	if (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode)) {
		if (cache_identity(arg, id, sizeof(id), e) < 0)
			return -1;
		return cache_remove(c, id, true, e) < 0 ? err_wrap(e, "%s", arg) : 0;
	}
	return cache_remove(c, arg, true, e);
}

/* The named containers that can never be continued (named_gc). */
static int gc_named(const struct options *o, const struct cache_cfg *c, struct err *e)
{
	unsigned long long bytes;
	size_t removed;
	char b[32];

	if (named_gc(c, &removed, &bytes, e) < 0)
		return -1;
	human(bytes, b, sizeof(b));
	if (removed > 0 && !o->quiet)
		printf("removed %zu named container%s whose image is gone or changed (%s) in "
		       "%s/containers\n", removed, removed == 1 ? "" : "s", b, c->dir);
	return 0;
}

/* The caller's staged copies (stagedir.h) of jobs that are over, which a
 * cancelled or timed-out job leaves on its nodes: gc collects them first,
 * with or without a budget. */
static int gc_staged(const struct options *o, struct err *e)
{
	const char *dir = stage_dir_of(o);
	unsigned long long bytes;
	size_t removed;
	char b[32];

	if (stagedir_gc(dir, &removed, &bytes, e) < 0)
		return -1;
	human(bytes, b, sizeof(b));
	if (removed > 0 && !o->quiet)
		printf("removed %zu staged cop%s of ended jobs (%s) in %s\n", removed,
		       removed == 1 ? "y" : "ies", b, dir);
	return 0;
}

/* The image store's layer cache and dead pullers' leftovers (store.h). */
static int gc_store(const struct options *o, struct err *e)
{
	char store[PATH_MAX], b[32];
	unsigned long long freed;
	struct stat st;

	if (image_store_dir(o, store, sizeof(store), e) < 0)
		return -1;
	if (stat(store, &st) < 0)
		return 0;
	if (store_gc(store, &freed, e) < 0)
		return -1;
	human(freed, b, sizeof(b));
	if (freed > 0 && !o->quiet)
		printf("removed the image store's layers and leftovers (%s) in %s\n", b, store);
	return 0;
}

int cmd_cache(struct options *o, struct err *e)
{
	char dir[PATH_MAX], rootfs[PATH_MAX], id[CACHE_ID_MAX];
	struct cache_cfg c;
	char **w = o->command.v;
	size_t n = o->command.n;

	if (n == 0)
		return err_set(e, EXIT_USAGE, "%s", cache_usage);
	if (strcmp(w[0], "-h") == 0 || strcmp(w[0], "--help") == 0) {
		printf("%s\n", cache_usage);
		return 0;
	}
	if (ctr_cache_cfg(o, &c, dir, sizeof(dir), e) < 0)
		return -1;
	if (n >= 2 && strcmp(w[1], "--shared") == 0) {
		if (o->cache_shared == NULL)
			return err_set(e, EXIT_USAGE, "cache %s --shared: no shared cache is configured "
				       "(set [cache] shared = DIR in ctrun.ini, or CTRUN_CACHE_SHARED)",
				       w[0]);
		if (xsnprintf(dir, sizeof(dir), "%s", o->cache_shared) < 0)
			return err_set(e, EXIT_USAGE, "[cache] shared too long");
		c.shared = true;
		c.lookup = NULL;
		free(w[1]);
		memmove(&w[1], &w[2], (n - 1) * sizeof(*w)); /* with the NULL */
		n = --o->command.n;
	}
	if (strcmp(w[0], "list") == 0 && n == 1)
		return do_list(&c, e) < 0 ||
		       (!c.shared && (list_named(&c, e) < 0 || list_store(o, e) < 0)) ? -1 : 0;
	if (strcmp(w[0], "dir") == 0 && n == 1) {
		printf("%s\n", c.dir);
		return 0;
	}
	if (strcmp(w[0], "id") == 0 && n == 2) {
		if (cache_identity(w[1], id, sizeof(id), e) < 0)
			return -1;
		printf("%s\n", id);
		return 0;
	}
	if (strcmp(w[0], "create") == 0 && n >= 2) {
		for (size_t i = 1; i < n; i++) {
			char *img = NULL;
			int r = image_resolve_one(o, w[i], &img, e);

			if (r == 0)
				r = cache_get_rootfs(&c, img != NULL ? img : w[i], rootfs, sizeof(rootfs), e);
			free(img);
			if (r < 0)
				return -1;
			printf("%s\n", rootfs);
		}
		return 0;
	}
	if (strcmp(w[0], "remove") == 0 && n >= 2) {
		for (size_t i = 1; i < n; i++)
			if (remove_one(o, &c, w[i], e) < 0)
				return -1;
		return 0;
	}
	if (strcmp(w[0], "gc") == 0 && (n == 1 || n == 3)) {
		unsigned long long budget = c.budget_bytes, freed;
		char f[32];

		if (n == 3) {
			if (strcmp(w[1], "--budget") != 0)
				return err_set(e, EXIT_USAGE, "%s", cache_usage);
			if (parse_size(w[2], &budget) < 0)
				return err_set(e, EXIT_USAGE, "--budget: '%s' is not a size (bytes, or "
					       "with K, M, G, T)", w[2]);
		}
		if (!c.shared && (gc_staged(o, e) < 0 || gc_store(o, e) < 0 || gc_named(o, &c, e) < 0))
			return -1;
		if (n == 1 && budget == 0)
			return err_set(e, EXIT_USAGE, "cache gc: no budget (give --budget SIZE or set "
				       "[cache] budget)");
		if (cache_gc(&c, budget, &freed, e) < 0)
			return -1;
		human(freed, f, sizeof(f));
		if (!o->quiet)
			printf("freed %s in %s\n", f, c.dir);
		return 0;
	}
	return err_set(e, EXIT_USAGE, "%s", cache_usage);
}
