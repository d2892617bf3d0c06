/* sqstored.c - a stored squashfs as the bottom of a new one (see sqimage.h,
 * sqimage_base): its tree read back into the tree in memory, its data and
 * fragment blocks copied as they are (compressed once, when it was made),
 * so an image one layer away from a stored one costs that layer, the copy
 * and the tables, not a new decompression and compression of everything.
 *
 * The stored file is trusted as the store trusts it (the caller opened it
 * with store_open), and still every offset read is checked against it:
 * a file's blocks and every fragment lie in its data area, every inode
 * number is below its count, every name is one a directory may hold. */
#include "sqimage_int.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIZE_MASK ((1u << 24) - 1) /* a block size without its "uncompressed" bit */
#define MAX_DEPTH 256              /* as sqtree.c */
#define CHUNK (1u << 20)

struct base {
	struct sqimage *s;
	sqfs_super_t super;
	sqfs_u64 start, end; /* the stored image's data area */
	sqfs_s64 delta;      /* where it lands in the new image, less where it was */
	struct minode **byno; /* inode number -> inode (hard links) */
	unsigned long long unpacked;
	struct err *e;
};

static int bad(struct base *b, const char *why)
{
	return err_set(b->e, EXIT_CTRUN, "the stored image: %s", why);
}

/* A file inode's blocks inside the data area, moved by delta. */
static int place_file(struct base *b, sqfs_inode_generic_t *sq)
{
	size_t n = sqfs_inode_get_file_block_count(sq);
	sqfs_u64 start, len = 0, size;

	sqfs_inode_get_file_block_start(sq, &start);
	for (size_t i = 0; i < n; i++)
		len += sq->extra[i] & SIZE_MASK;
	if (n > 0 && (start < b->start || start > b->end || len > b->end - start))
		return bad(b, "a file's blocks lie outside its data");
	if (n > 0)
		sqfs_inode_set_file_block_start(sq, (sqfs_u64)((sqfs_s64)start + b->delta));
	if (sqfs_inode_get_file_size(sq, &size) == 0)
		b->unpacked += size;
	return 0;
}

static bool good_name(const char *n)
{
	return n[0] != '\0' && strcmp(n, ".") != 0 && strcmp(n, "..") != 0 && !strchr(n, '/') &&
	       strlen(n) <= NAME_MAX;
}

/* node's entries into dir. */
static int import_dir(struct base *b, const sqfs_tree_node_t *node, struct mnode *dir, int depth)
{
	struct mtree *t = &b->s->tree;

	if (depth > MAX_DEPTH)
		return bad(b, "directories nested too deep");
	for (sqfs_tree_node_t *k = node->children; k != NULL; k = k->next) {
		const char *name = (const char *)k->name;
		sqfs_inode_generic_t *sq = k->inode;
		sqfs_u32 no = sq->base.inode_number;
		struct minode *ino = NULL;
		struct mnode *n;

		if (!good_name(name) || mtree_child(t, dir, name) != NULL)
			return bad(b, "a bad or repeated name");
		if (no == 0 || no > b->super.inode_count)
			return bad(b, "an inode number out of range");
		b->unpacked += 512 + strlen(name); /* as unpack_limit_member counts a member */
		switch (sq->base.type) {
		case SQFS_INODE_DIR:
		case SQFS_INODE_EXT_DIR:
			ino = mtree_inode(t, S_IFDIR | (sq->base.mode & 07777));
			break;
		case SQFS_INODE_FILE:
		case SQFS_INODE_EXT_FILE:
			ino = b->byno[no]; /* a hard link: its first name made it */
			if (ino != NULL)
				break;
			if (place_file(b, sq) < 0)
				return -1;
			ino = mtree_inode(t, S_IFREG | (sq->base.mode & 07777));
			if (ino != NULL) {
				ino->data = sq; /* taken from the tree node */
				t->bytes += MTREE_FILE_COST;
				k->inode = NULL;
				b->byno[no] = ino;
			}
			break;
		case SQFS_INODE_SLINK:
		case SQFS_INODE_EXT_SLINK:
			if (sq->data.slink.target_size == 0 ||
			    sq->data.slink.target_size > sq->payload_bytes_used)
				return bad(b, "a bad symlink");
			ino = mtree_inode(t, S_IFLNK | 0777);
			if (ino != NULL && mtree_set_target(t, ino, (const char *)sq->extra,
							    sq->data.slink.target_size) < 0)
				ino = NULL;
			b->unpacked += sq->data.slink.target_size;
			break;
		default:
			continue; /* nothing else is in a stored image (sqtree.c) */
		}
		if (ino == NULL || (n = mtree_link(t, dir, name, ino)) == NULL)
			return err_sys(b->e, EXIT_CTRUN, "reading the stored image");
		if (ino->mtime == 0)
			ino->mtime = (int64_t)sq->base.mod_time;
		if (mnode_is_dir(n) && import_dir(b, k, n, depth + 1) < 0)
			return -1;
	}
	return 0;
}

/* Bytes [from, from+len) of in to `to` of the new image. */
static int copy_data(struct base *b, int in, sqfs_u64 from, sqfs_u64 to, sqfs_u64 len)
{
	struct sqfd *f = b->s->file;
	loff_t ioff = (loff_t)from, ooff = (loff_t)to;
	char *buf = NULL;

	while (len > 0) {
		ssize_t n = copy_file_range(in, &ioff, f->fd, &ooff, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* not on this file system: read and written below */
		len -= (sqfs_u64)n;
	}
	while (len > 0) {
		size_t k = len < CHUNK ? (size_t)len : CHUNK;
		ssize_t n;

		if (buf == NULL && (buf = malloc(CHUNK)) == NULL)
			return err_sys(b->e, EXIT_CTRUN, "copying the stored image");
		n = pread(in, buf, k, ioff);
		if (n <= 0 || f->base.write_at(&f->base, (sqfs_u64)ooff, buf, (size_t)n) != 0) {
			free(buf);
			return err_sys(b->e, EXIT_CTRUN, "copying the stored image");
		}
		ioff += n;
		ooff += n;
		len -= (sqfs_u64)n;
	}
	free(buf);
	if ((sqfs_u64)ooff > f->size)
		f->size = (sqfs_u64)ooff;
	return 0;
}

/* The fragment table read into the new image's, each block moved by delta. */
static int fragments(struct base *b, sqfs_file_t *in, sqfs_compressor_t *cmp)
{
	struct sqimage *s = b->s;
	size_t n;
	int r;

	if (b->super.fragment_entry_count == 0)
		return 0;
	r = sqfs_frag_table_read(s->frag, in, &b->super, cmp);
	if (r != 0)
		return sq_fail(s, r, "the stored image's fragment table", b->e);
	n = sqfs_frag_table_get_size(s->frag);
	for (sqfs_u32 i = 0; i < n; i++) {
		sqfs_fragment_t fr;
		sqfs_u32 len;

		if (sqfs_frag_table_lookup(s->frag, i, &fr) != 0)
			return bad(b, "its fragment table");
		len = fr.size & SIZE_MASK;
		if (len == 0)
			continue;
		if (fr.start_offset < b->start || fr.start_offset > b->end ||
		    len > b->end - fr.start_offset)
			return bad(b, "a fragment lies outside its data");
		if (sqfs_frag_table_set(s->frag, i,
					(sqfs_u64)((sqfs_s64)fr.start_offset + b->delta),
					fr.size) != 0)
			return bad(b, "its fragment table");
	}
	return 0;
}

/* The stored image's data area: after its super block and compressor
 * options, before its inode table. */
static int data_area(struct base *b, sqfs_file_t *in, sqfs_u64 size)
{
	sqfs_u64 start = sizeof(sqfs_super_t);

	if (b->super.flags & SQFS_FLAG_COMPRESSOR_OPTIONS) {
		sqfs_u16 hdr;

		if (in->read_at(in, start, &hdr, sizeof(hdr)) != 0)
			return bad(b, "its compressor options cannot be read");
		start += sizeof(hdr) + (le16toh(hdr) & 0x7FFF);
	}
	if (b->super.inode_table_start < start || b->super.inode_table_start > size ||
	    b->super.bytes_used > size)
		return bad(b, "its tables lie outside the file");
	b->start = start;
	b->end = b->super.inode_table_start;
	return 0;
}

int sqimage_base(struct sqimage *s, int fd, unsigned layers, unsigned long long *unpacked,
		 struct err *e)
{
	struct base b = { .s = s, .e = e };
	struct sqfd *in = calloc(1, sizeof(*in));
	sqfs_id_table_t *ids = NULL;
	sqfs_dir_reader_t *dr = NULL;
	sqfs_tree_node_t *root = NULL;
	struct stat st;
	int r, rv = -1;

	if (in == NULL)
		return err_sys(e, EXIT_CTRUN, "reading the stored image");
	if (s->tree.count != 0 || s->file->size != s->data_start) {
		free(in);
		return err_set(e, EXIT_CTRUN, "the stored image: given after the image began");
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(in);
		return err_set(e, EXIT_CTRUN, "the stored image: not a regular file");
	}
	sqfd_init(in, fd, (sqfs_u64)st.st_size);
	r = sqfs_super_read(&b.super, &in->base);
	if (r != 0) {
		sq_fail(s, r, "the stored image's super block", e);
		goto out;
	}
	/* The same compressor and block size, data compressed alike: its
	 * blocks are then blocks of the new image as they are. */
	if (b.super.compression_id != s->super.compression_id ||
	    b.super.block_size != s->super.block_size ||
	    (b.super.flags & SQFS_FLAG_UNCOMPRESSED_DATA) !=
		    (s->super.flags & SQFS_FLAG_UNCOMPRESSED_DATA) ||
	    b.super.xattr_id_table_start != 0xFFFFFFFFFFFFFFFFULL) {
		bad(&b, "another compressor, block size or xattrs than the new image's");
		goto out;
	}
	if (data_area(&b, &in->base, (sqfs_u64)st.st_size) < 0)
		goto out;
	b.delta = (sqfs_s64)s->data_start - (sqfs_s64)b.start;
	b.byno = calloc((size_t)b.super.inode_count + 1, sizeof(*b.byno));
	ids = sqfs_id_table_create(0);
	dr = sqfs_dir_reader_create(&b.super, s->uncmp, &in->base, 0);
	if (b.byno == NULL || ids == NULL || dr == NULL) {
		sq_fail(s, SQFS_ERROR_ALLOC, "reading the stored image", e);
		goto out;
	}
	r = sqfs_id_table_read(ids, &in->base, &b.super, s->uncmp);
	if (r == 0)
		r = sqfs_dir_reader_get_full_hierarchy(dr, ids, NULL, 0, &root);
	if (r != 0) {
		sq_fail(s, r, "reading the stored image's tree", e);
		goto out;
	}
	s->tree.rootino.mode = S_IFDIR | (root->inode->base.mode & 07777);
	s->tree.rootino.mtime = (int64_t)root->inode->base.mod_time;
	if (import_dir(&b, root, &s->tree.root, 0) < 0 || fragments(&b, &in->base, s->uncmp) < 0 ||
	    copy_data(&b, fd, b.start, s->data_start, b.end - b.start) < 0)
		goto out;
	s->tree.layer = layers;
	*unpacked = b.unpacked;
	rv = 0;
out:
	sqfs_dir_tree_destroy(root);
	sqfs_destroy(dr);
	sqfs_destroy(ids);
	free(b.byno);
	free(in);
	return rv;
}
