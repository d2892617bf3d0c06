/* fuzz_stream.c - libFuzzer target for the streaming layer writer, a
 * registry pull's path (images/squash/layerfile.c, mlayer.c, mtree.c, sqimage.c,
 * sqtree.c): the bytes are a layer (a tar, in any compression libarchive
 * reads in process), applied twice, as layers 1 and 2 of one squashfs (so
 * that whiteouts, opaque markers and hard links meet a lower layer), then
 * the config and the tables are written.  Bounded as a pull is (16 MiB
 * unpacked, 4 MiB of tree): whatever the bytes say, the tree never passes
 * its bound by more than one member's worth, every name's inode counts its
 * names, every error is one line, and nothing crashes or leaks (ASan).
 * run.sh runs it under a memory limit (-rss_limit_mb, -malloc_limit_mb),
 * seeded with layers of hard links carrying data, long link targets,
 * whiteouts and opaque markers, and with the compressions a pulled layer
 * may not use or whose header asks for the most memory: xz asking for a
 * 4 GiB dictionary, lzma, bzip2, zstd asking for a 128 MiB window and for
 * 2 GiB, zstd inside gzip (tests/integration/reg_layers.py).  Whatever the
 * bytes, no decoder but gzip's and zstd's is set up, and zstd's window
 * stays under the allocation limit. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unpack/archive_filter.h"
#include "squash/layerfile.h"
#include "squash/mtree.h"
#include "squash/sqimage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TREE_MAX (4u << 20)
/* One member's worth: its name and target (each under PATH_MAX), its missing
 * parents (at most PATH_MAX / 2 of them), the lookup table doubling. */
#define SLACK (1u << 20)

static void one_line(const struct err *e)
{
	if (e->code == 0 || e->msg[0] == '\0' || strchr(e->msg, '\n') != NULL)
		abort();
}

/* Every inode counts the names it has; a nameless one (replaced, or data
 * written again) none. */
static void check_links(struct mtree *t)
{
	struct minode *i;

	for (i = t->inodes; i != NULL; i = i->all)
		i->num = 0;
	for (size_t b = 0; b < t->nbucket; b++)
		for (struct mnode *n = t->bucket[b]; n != NULL; n = n->hnext)
			n->ino->num++;
	for (i = t->inodes; i != NULL; i = i->all) {
		if (i->num != i->nlink)
			abort();
		if (i->rewrite != NULL && i->rewrite->nlink != 0)
			abort();
		i->num = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int in = -1, out = -1;
	struct sqimage_opts o = { .comp = SQ_LZ4, .threads = 1 };
	struct unpack_limit lim = { .image = "fuzz", .max = 16u << 20, .max_tree = TREE_MAX };
	struct sqimage *s = NULL;
	struct err e = { 0 };
	int rv = 0;

	if (in < 0 && ((in = memfd_create("layer", 0)) < 0 || (out = memfd_create("sqsh", 0)) < 0))
		abort();
	if (ftruncate(in, 0) < 0 || pwrite(in, data, size, 0) != (ssize_t)size ||
	    ftruncate(out, 0) < 0 || lseek(out, 0, SEEK_SET) < 0)
		abort();
	if (sqimage_open(&s, out, &o, &e) < 0)
		abort();
	for (size_t k = 0; k < 2 && rv == 0; k++) {
		rv = layerfile_apply(in, k, "fuzz", s, &lim, &e);
		if (sqimage_tree(s)->bytes > TREE_MAX + SLACK)
			abort();
		check_links(sqimage_tree(s));
	}
	if (rv == 0) {
		int cfg = memfd_create("config", 0);

		if (cfg < 0 || write(cfg, "{}", 2) != 2)
			abort();
		rv = layerfile_config(cfg, s, &e);
		close(cfg);
	}
	if (rv == 0)
		rv = sqimage_finish(s, &e);
	if (rv < 0)
		one_line(&e);
	sqimage_free(s);
	return 0;
}
