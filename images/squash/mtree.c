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

#include "pathwalk.h"

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

/* The walk's back end (core/pathwalk.h, inroot.c's walk): the directories
 * from the root down, `child` the node a lookup holds. */
struct nodes {
	const struct mtree *t;
	struct mnode *stack[PATH_MAX / 2 + 2];
	size_t depth;
	struct mnode *child;
};

static int nodes_lookup(void *be, const char *name, mode_t *type)
{
	struct nodes *b = be;

	b->child = mtree_child(b->t, b->stack[b->depth], name);
	if (b->child != NULL)
		*type = b->child->ino->mode & S_IFMT;
	else
		errno = ENOENT;
	return b->child != NULL ? 0 : -1;
}

static int nodes_readlink(void *be, char *buf, size_t size)
{
	struct nodes *b = be;
	const char *target = b->child->ino->target != NULL ? b->child->ino->target : "";

	b->child = NULL;
	if ((size_t)snprintf(buf, size, "%s", target) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* A tree is walked, never changed, by a resolve. */
static int nodes_mkdir(void *be, const char *name, mode_t mode)
{
	(void)be, (void)name, (void)mode;
	errno = EROFS;
	return -1;
}

static int nodes_enter(void *be)
{
	struct nodes *b = be;

	if (b->depth + 1 >= sizeof(b->stack) / sizeof(b->stack[0])) {
		errno = ENAMETOOLONG;
		return -1;
	}
	b->stack[++b->depth] = b->child;
	b->child = NULL;
	return 0;
}

static void nodes_drop(void *be)
{
	((struct nodes *)be)->child = NULL;
}

static void nodes_up(void *be)
{
	((struct nodes *)be)->depth--;
}

static void nodes_to_root(void *be)
{
	((struct nodes *)be)->depth = 0;
}

static const struct pathwalk_ops nodes_ops = { nodes_lookup, nodes_readlink, nodes_mkdir,
					       nodes_enter, nodes_drop, nodes_up, nodes_to_root };

int mtree_resolve(const struct mtree *t, const char *path, bool follow_last, char *out,
		  size_t size)
{
	/* Chroot semantics, missing components kept as text. */
	struct {
		struct pathwalk w;
		struct nodes b;
	} *r = calloc(1, sizeof(*r));
	char leaf[NAME_MAX + 1];
	int rv = -1;

	if (r == NULL)
		return -1;
	r->b.t = t;
	r->b.stack[0] = (struct mnode *)&t->root;
	r->w.ops = &nodes_ops;
	r->w.be = &r->b;
	r->w.follow_last = follow_last;
	r->w.missing_ok = true;
	if (pathwalk_run(&r->w, path, leaf, sizeof(leaf), NULL) == 0)
		rv = pathwalk_result(&r->w, leaf, out, size, NULL);
	free(r);
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
