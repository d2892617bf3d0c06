/* mtree.h - an image's file tree in memory: what its layers leave, merged
 * by the rules layer.c applies on disk, without the disk.
 *
 * A registry pull streams its layers into one squashfs (sqimage.h): the
 * tree of names, types, modes, owners, times and link targets is kept
 * here, each regular file's data goes to the squashfs as it is read, and
 * only the tree is written at the end.  Paths are resolved here as
 * core/inroot.c resolves them in a directory (chroot semantics: an
 * absolute link restarts at the root, ".." stops there, at most 40 links;
 * components that do not exist stay as text), so a layer's `lib -> usr/lib`
 * followed by `lib/x` lands in usr/lib/x and `evil -> /etc` followed by
 * `evil/passwd` in the image's own /etc, exactly as on disk.  Pure: no I/O,
 * no library; the unit tests and the merge (mlayer.c) call it directly. */
#ifndef CTRUN_MTREE_H
#define CTRUN_MTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An inode: shared by the names that are hard links to it. */
struct minode {
	uint32_t mode;  /* S_IFMT type and permission bits */
	uint32_t uid, gid;
	int64_t mtime;
	uint32_t nlink; /* names in the tree; 0: gone (kept until mtree_free) */
	char *target;   /* a symlink's */
	void *data;     /* a regular file's data: the squashfs writer's inode */
	uint32_t num;   /* the squashfs inode number, when written */
	uint64_t ref;   /* its location in the inode table, when written */
	struct minode *all; /* every inode ever made, for mtree_free */
};

/* A name in a directory. */
struct mnode {
	char *name;
	struct mnode *parent;
	struct mnode *prev, *next; /* siblings */
	struct mnode *kids;        /* a directory's first entry */
	struct mnode *hnext;       /* the lookup table's chain */
	struct minode *ino;
	unsigned stamp;            /* the layer that wrote it or something below it */
};

struct mtree {
	struct mnode root;
	struct minode rootino;
	struct mnode **bucket;
	size_t nbucket, count;
	struct minode *inodes;
	unsigned layer; /* the layer being applied (from 1) */
	int64_t now;    /* the time given to directories made implicitly */
	unsigned long made; /* directories made implicitly (mtree_mkparents), ever */
};

/* An empty tree: a root directory of mode 0755, root's, made at `now`. */
void mtree_init(struct mtree *t, int64_t now);
/* Frees everything; free_data(ino->data) for each inode that has data. */
void mtree_free(struct mtree *t, void (*free_data)(void *data));

static inline bool mnode_is_dir(const struct mnode *n)
{
	return (n->ino->mode & 0170000) == 0040000;
}

/* The entry `name` of directory dir, or NULL. */
struct mnode *mtree_child(const struct mtree *t, const struct mnode *dir, const char *name);

/* inroot_resolve(INROOT_CHROOT) in the tree: the symlink-free form of the
 * relative, cleaned `path` ("." for the root), components that do not exist
 * kept as text; the last followed only if follow_last.  -1 with errno:
 * ELOOP (over 40 links), ENOTDIR (a file on the way), ENAMETOOLONG. */
int mtree_resolve(const struct mtree *t, const char *path, bool follow_last, char *out,
		  size_t size);

/* The node at a resolved path, never following a link: NULL with errno
 * ENOENT (absent) or ENOTDIR (a non-directory on the way). */
struct mnode *mtree_lookup(const struct mtree *t, const char *resolved);

/* The directory at a resolved path, its missing components made (mode
 * 0755, root's, t->now), as libarchive makes a member's parents: NULL with
 * errno ENOTDIR when a non-directory is on the way, ENOMEM. */
struct mnode *mtree_mkparents(struct mtree *t, const char *resolved);

/* A new inode (nlink 0 until linked); NULL when out of memory. */
struct minode *mtree_inode(struct mtree *t, uint32_t mode);
/* Links ino as `name` in dir (where nothing of that name is); NULL: ENOMEM. */
struct mnode *mtree_link(struct mtree *t, struct mnode *dir, const char *name,
			 struct minode *ino);
/* Removes n and everything below it (n is not the root). */
void mtree_remove(struct mtree *t, struct mnode *n);
/* Marks n and its ancestors as written by the current layer. */
void mtree_mark(struct mtree *t, struct mnode *n);
/* An opaque marker: removes every entry of dir that the current layer has
 * not written (nor written below). */
void mtree_clear_dir(struct mtree *t, struct mnode *dir);

#endif
