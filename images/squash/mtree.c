/* mtree.c - an image's file tree in memory (see mtree.h).
 *
 * Names are found through one hash table keyed by (directory, name); each
 * directory also keeps its entries in a list, for removal and for writing
 * it out.  Inodes are never freed before mtree_free: the squashfs writer's
 * threads may still be filling in a replaced file's block list.  Every
 * allocation is counted in t->bytes as it is made and freed. */
#include "mtree.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_LINKS 40 /* symlinks per path, as inroot.c and the kernel */

static size_t hash(const struct mnode *dir, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)dir;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 29));
}

void mtree_init(struct mtree *t, int64_t now)
{
	memset(t, 0, sizeof(*t));
	t->now = now;
	t->rootino.mode = S_IFDIR | 0755;
	t->rootino.mtime = now;
	t->rootino.nlink = 1;
	t->root.ino = &t->rootino;
	t->root.name = (char *)"";
}

static void free_names(struct mnode *dir)
{
	struct mnode *n = dir->kids, *next;

	for (; n != NULL; n = next) {
		next = n->next;
		if (n->kids != NULL)
			free_names(n);
		free(n->name);
		free(n);
	}
	dir->kids = NULL;
}

void mtree_free(struct mtree *t, void (*free_data)(void *data))
{
	struct minode *i, *next;

	free_names(&t->root);
	for (i = t->inodes; i != NULL; i = next) {
		next = i->all;
		if (i->data != NULL && free_data != NULL)
			free_data(i->data);
		free(i->target);
		free(i);
	}
	free(t->bucket);
	t->inodes = NULL;
	t->bucket = NULL;
	t->nbucket = t->count = 0;
	t->bytes = 0;
}

struct mnode *mtree_child(const struct mtree *t, const struct mnode *dir, const char *name)
{
	struct mnode *n;

	if (t->nbucket == 0)
		return NULL;
	for (n = t->bucket[hash(dir, name) & (t->nbucket - 1)]; n != NULL; n = n->hnext) {
		((struct mtree *)t)->probes++; /* a count, not the tree: never a const object */
		if (n->parent == dir && strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

static int grow(struct mtree *t)
{
	size_t cap = t->nbucket ? t->nbucket * 2 : 4096;
	struct mnode **b = calloc(cap, sizeof(*b));

	if (b == NULL)
		return -1;
	for (size_t i = 0; i < t->nbucket; i++) {
		struct mnode *n = t->bucket[i], *next;

		for (; n != NULL; n = next) {
			size_t k = hash(n->parent, n->name) & (cap - 1);

			next = n->hnext;
			n->hnext = b[k];
			b[k] = n;
		}
	}
	free(t->bucket);
	if (t->nbucket > 0)
		t->bytes -= MTREE_ALLOC(t->nbucket * sizeof(*b));
	t->bytes += MTREE_ALLOC(cap * sizeof(*b));
	t->bucket = b;
	t->nbucket = cap;
	return 0;
}

struct minode *mtree_inode(struct mtree *t, uint32_t mode)
{
	struct minode *i = calloc(1, sizeof(*i));

	if (i == NULL)
		return NULL;
	i->mode = mode;
	i->all = t->inodes;
	t->inodes = i;
	t->bytes += MTREE_ALLOC(sizeof(*i));
	return i;
}

int mtree_set_target(struct mtree *t, struct minode *ino, const char *target, size_t len)
{
	char *p = strndup(target, len);

	if (p == NULL)
		return -1;
	if (ino->target != NULL)
		t->bytes -= MTREE_ALLOC(strlen(ino->target) + 1);
	free(ino->target);
	ino->target = p;
	t->bytes += MTREE_ALLOC(strlen(p) + 1);
	return 0;
}

struct minode *mtree_rewrite(struct mtree *t, struct minode *ino)
{
	struct minode *d = mtree_inode(t, S_IFREG);

	if (d != NULL)
		ino->rewrite = d;
	return d;
}

void mtree_settle(struct mtree *t)
{
	for (struct minode *i = t->inodes; i != NULL; i = i->all) {
		if (i->rewrite != NULL) {
			void *old = i->data;

			i->data = i->rewrite->data;
			i->rewrite->data = old;
			i->rewrite = NULL;
		}
	}
}

struct mnode *mtree_link(struct mtree *t, struct mnode *dir, const char *name,
			 struct minode *ino)
{
	struct mnode *n;
	size_t k;

	if (t->count + 1 > t->nbucket && grow(t) < 0)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (n == NULL || (n->name = strdup(name)) == NULL) {
		free(n);
		return NULL;
	}
	t->bytes += MTREE_ALLOC(sizeof(*n)) + MTREE_ALLOC(strlen(name) + 1);
	n->parent = dir;
	n->ino = ino;
	ino->nlink++;
	n->next = dir->kids;
	if (dir->kids != NULL)
		dir->kids->prev = n;
	dir->kids = n;
	k = hash(dir, name) & (t->nbucket - 1);
	n->hnext = t->bucket[k];
	t->bucket[k] = n;
	t->count++;
	return n;
}

static void unhash(struct mtree *t, struct mnode *n)
{
	struct mnode **p = &t->bucket[hash(n->parent, n->name) & (t->nbucket - 1)];

	while (*p != n)
		p = &(*p)->hnext;
	*p = n->hnext;
	t->count--;
}

/* n and what is below it, out of the table and freed (n already unlinked
 * from its siblings). */
static void drop(struct mtree *t, struct mnode *n)
{
	struct mnode *k, *next;

	for (k = n->kids; k != NULL; k = next) {
		next = k->next;
		drop(t, k);
	}
	unhash(t, n);
	n->ino->nlink--;
	t->bytes -= MTREE_ALLOC(sizeof(*n)) + MTREE_ALLOC(strlen(n->name) + 1);
	free(n->name);
	free(n);
}

void mtree_remove(struct mtree *t, struct mnode *n)
{
	if (n->prev != NULL)
		n->prev->next = n->next;
	else
		n->parent->kids = n->next;
	if (n->next != NULL)
		n->next->prev = n->prev;
	drop(t, n);
}

void mtree_mark(struct mtree *t, struct mnode *n)
{
	for (; n != NULL && n != &t->root; n = n->parent)
		n->stamp = t->layer;
}

void mtree_clear_dir(struct mtree *t, struct mnode *dir)
{
	struct mnode *n, *next;

	/* A second marker of the layer would find nothing to remove: without
	 * this, each would walk the directory again (quadratic in a layer). */
	if (dir->cleared == t->layer)
		return;
	dir->cleared = t->layer;
	for (n = dir->kids; n != NULL; n = next) {
		next = n->next;
		t->probes++;
		if (n->stamp != t->layer)
			mtree_remove(t, n);
	}
}

/* ---- paths ---------------------------------------------------------------- */

/* The walk of inroot.c, over the tree: `stack` holds the directories from
 * the root down; `virt` counts the components at the end of `shown` that
 * do not exist (kept as text). */
struct walk {
	const struct mtree *t;
	struct mnode *stack[PATH_MAX / 2 + 2];
	size_t depth, virt;
	int links;
	char shown[PATH_MAX];
	char todo[PATH_MAX * 2];
};

static int shown_add(struct walk *w, const char *name)
{
	size_t len = strlen(w->shown);

	if (len + 1 + strlen(name) >= sizeof(w->shown)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(w->shown + len, sizeof(w->shown) - len, "/%s", name);
	return 0;
}

static void pop(struct walk *w)
{
	char *slash = strrchr(w->shown, '/');

	if (slash != NULL)
		*slash = '\0';
	if (w->virt > 0)
		w->virt--;
	else
		w->depth--;
}

static int follow(struct walk *w, const struct mnode *link, const char *rest)
{
	char tmp[sizeof(w->todo)];
	const char *target = link->ino->target != NULL ? link->ino->target : "";

	if (++w->links > MAX_LINKS) {
		errno = ELOOP;
		return -1;
	}
	if (target[0] == '/') { /* chroot: an absolute link restarts at the root */
		w->depth = 0;
		w->virt = 0;
		w->shown[0] = '\0';
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", target, rest) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(w->todo, tmp, sizeof(w->todo));
	return 0;
}

int mtree_resolve(const struct mtree *t, const char *path, bool follow_last, char *out,
		  size_t size)
{
	struct walk *w = malloc(sizeof(*w));
	char leaf[NAME_MAX + 1];
	int rv = -1, n;

	if (w == NULL)
		return -1;
	w->t = t;
	w->stack[0] = (struct mnode *)&t->root;
	w->depth = w->virt = 0;
	w->links = 0;
	w->shown[0] = '\0';
	if ((size_t)snprintf(w->todo, sizeof(w->todo), "%s", path) >= sizeof(w->todo)) {
		errno = ENAMETOOLONG;
		goto out;
	}
	for (;;) {
		char c[NAME_MAX + 1], rest[sizeof(w->todo)];
		const char *p = w->todo + strspn(w->todo, "/"), *after;
		size_t len = strcspn(p, "/");
		struct mnode *node;
		bool last;

		if (len == 0) {
			leaf[0] = '\0';
			break;
		}
		if (len > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto out;
		}
		memcpy(c, p, len);
		c[len] = '\0';
		after = p + len + strspn(p + len, "/");
		last = *after == '\0';
		memmove(rest, after, strlen(after) + 1);
		memcpy(w->todo, rest, strlen(rest) + 1);
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (w->depth > 0 || w->virt > 0)
				pop(w);
			continue;
		}
		if (w->virt > 0) { /* below a missing directory: text only */
			if (shown_add(w, c) < 0)
				goto out;
			w->virt++;
			continue;
		}
		if (last && !follow_last) {
			snprintf(leaf, sizeof(leaf), "%s", c);
			break;
		}
		node = mtree_child(t, w->stack[w->depth], c);
		if (node == NULL) {
			if (last) {
				snprintf(leaf, sizeof(leaf), "%s", c);
				break;
			}
			if (shown_add(w, c) < 0)
				goto out;
			w->virt++;
			continue;
		}
		if ((node->ino->mode & S_IFMT) == S_IFLNK) {
			if (follow(w, node, rest) < 0)
				goto out;
			continue;
		}
		if (last) {
			snprintf(leaf, sizeof(leaf), "%s", c);
			break;
		}
		if (!mnode_is_dir(node)) {
			errno = ENOTDIR;
			goto out;
		}
		if (w->depth + 1 >= sizeof(w->stack) / sizeof(w->stack[0]) || shown_add(w, c) < 0) {
			errno = ENAMETOOLONG;
			goto out;
		}
		w->stack[++w->depth] = node;
	}
	/* shown is "" or "/a/b": the relative form drops its slash. */
	if (w->shown[0] == '\0')
		n = snprintf(out, size, "%s", leaf[0] != '\0' ? leaf : ".");
	else
		n = snprintf(out, size, "%s%s%s", w->shown + 1, leaf[0] != '\0' ? "/" : "", leaf);
	if (n < 0 || (size_t)n >= size)
		errno = ENAMETOOLONG;
	else
		rv = 0;
out:
	free(w);
	return rv;
}

/* Walks a resolved path: the node of its last component (NULL: errno), or
 * with `make`, its missing directories made on the way. */
static struct mnode *walk_resolved(struct mtree *t, const char *resolved, bool make)
{
	struct mnode *cur = &t->root;
	const char *p = resolved;

	if (strcmp(resolved, ".") == 0)
		return cur;
	while (*p != '\0') {
		size_t len = strcspn(p, "/");
		char c[NAME_MAX + 1];
		struct mnode *n;

		if (len == 0 || len > NAME_MAX) {
			errno = len == 0 ? EINVAL : ENAMETOOLONG;
			return NULL;
		}
		if (!mnode_is_dir(cur)) {
			errno = ENOTDIR;
			return NULL;
		}
		memcpy(c, p, len);
		c[len] = '\0';
		n = mtree_child(t, cur, c);
		if (n == NULL && make) {
			struct minode *i = mtree_inode(t, S_IFDIR | 0755);

			if (i == NULL || (n = mtree_link(t, cur, c, i)) == NULL) {
				errno = ENOMEM;
				return NULL;
			}
			i->mtime = t->now;
			t->made++;
		}
		if (n == NULL) {
			errno = ENOENT;
			return NULL;
		}
		cur = n;
		p += len;
		p += *p == '/';
	}
	if (make && !mnode_is_dir(cur)) {
		errno = ENOTDIR;
		return NULL;
	}
	return cur;
}

struct mnode *mtree_lookup(const struct mtree *t, const char *resolved)
{
	return walk_resolved((struct mtree *)t, resolved, false);
}

struct mnode *mtree_mkparents(struct mtree *t, const char *resolved)
{
	return walk_resolved(t, resolved, true);
}
