/* mtree.h - an image's file tree in memory: what its layers leave, merged
 * by the rules layer.c applies on disk, without the disk.
 *
 * A registry pull streams its layers into one squashfs (sqimage.h): the
 * tree of names, types, modes, owners, times and link targets is kept
 * here, each regular file's data goes to the squashfs as it is read, and
 * only the tree is written at the end.  Paths are resolved here by the
 * walk core/inroot.c resolves them with in a directory (core/pathwalk.c,
 * over this tree instead of descriptors; chroot semantics: an
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
	char *target;   /* a symlink's (mtree_set_target) */
	void *data;     /* a regular file's data: the squashfs writer's inode */
	/* The file's data written again (a hard link carrying data): that
	 * inode (nameless) holds it until mtree_settle swaps it into this one. */
	struct minode *rewrite;
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
	unsigned cleared;          /* the layer whose opaque marker last cleared it */
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
	size_t bytes;       /* the memory the tree holds now (see above) */
	/* Names compared and entries visited in lookups and clears, ever: the
	 * tests' measure of the work a layer costs (never a time). */
	unsigned long long probes;
};

/* What the tree counts for one allocation of n bytes (the allocator's
 * header and rounding included), and for a regular file's record in the
 * squashfs writer (libsquashfs's inode, before its block list). */
#define MTREE_ALLOC(n) ((((size_t)(n) + 8 + 15) / 16) * 16)
#define MTREE_FILE_COST MTREE_ALLOC(200)

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
/* ino's symlink target: the first len bytes of target; -1 when out of memory. */
int mtree_set_target(struct mtree *t, struct minode *ino, const char *target, size_t len);
/* The inode that will hold ino's data written again (ino a regular file):
 * a nameless one, ino->rewrite, that keeps its own data until mtree_settle
 * (the squashfs writer's threads fill it in until they are finished).  Every
 * name of ino has the new data then, at no cost per name.  NULL: ENOMEM. */
struct minode *mtree_rewrite(struct mtree *t, struct minode *ino);
/* After the squashfs writer is finished: each rewritten inode takes the data
 * written last (its old data goes to the nameless inode, freed with it). */
void mtree_settle(struct mtree *t);
/* Links ino as `name` in dir (where nothing of that name is); NULL: ENOMEM. */
struct mnode *mtree_link(struct mtree *t, struct mnode *dir, const char *name,
			 struct minode *ino);
/* Removes n and everything below it (n is not the root). */
void mtree_remove(struct mtree *t, struct mnode *n);
/* Marks n and its ancestors as written by the current layer. */
void mtree_mark(struct mtree *t, struct mnode *n);
/* An opaque marker: removes every entry of dir that the current layer has
 * not written (nor written below).  Once per directory and layer: what is
 * in it after that is the layer's own. */
void mtree_clear_dir(struct mtree *t, struct mnode *dir);

#endif
