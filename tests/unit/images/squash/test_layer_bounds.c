/* Unit tests: what a hostile layer may cost a pull's memory and time
 * (issue 41, points 1 and 2), in both writers: the stream into a squashfs
 * (mlayer.c, mtree.c) and the unpack to a tree on disk (layer.c).
 *
 * Memory: a name or link target of PATH_MAX bytes or more is refused, as
 * symlink(2) refuses it; names and targets count in bytes against
 * [cache] max_unpacked; the tree in memory counts what it holds and stops
 * at [registry] max_tree with one line naming the layer.
 * Time: hard links carrying data and repeated opaque markers cost work in
 * proportion to the entries, counted as the tree's probes (the names
 * compared and entries visited), never timed. */
#define CTRTEST_STREAM
#include "ctrtest.h"

#include "unpack/archive_filter.h"
#include "squash/mtree.h"

#define KiB (1u << 10)

/* The layer streamed alone into a new squashfs as a pull applies it, against
 * lim (NULL: no bound).  Its return; the tree's probes in *probes (NULL: not
 * wanted); the image finished when the layer applied. */
static int stream_one(const struct fx *f, struct blob l, struct unpack_limit *lim,
		      unsigned long long *probes, struct err *e)
{
	struct sqimage_opts o = { .comp = SQ_GZIP, .level = 1, .threads = 2 };
	char sqsh[200];
	struct sqimage *s = NULL;
	int fd, out, rv;

	write_blob(f->image, l);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_TRUNC, 0600);
	fd = open(f->image, O_RDONLY);
	assert_true(out >= 0 && fd >= 0);
	assert_int_equal(sqimage_open(&s, out, &o, e), 0);
	rv = layerfile_apply(fd, 0, "sha256:x", s, lim, e);
	if (probes != NULL)
		*probes = sqimage_tree(s)->probes;
	if (lim != NULL && lim->max_tree != 0)
		/* Checked after each member: past the bound by one member at most. */
		assert_true(sqimage_tree(s)->bytes <= lim->max_tree + 64 * KiB);
	if (rv == 0)
		rv = sqimage_finish(s, e);
	sqimage_free(s);
	close(fd);
	close(out);
	return rv;
}

/* The layers unpacked to f->dest (a docker archive of them), against max. */
static int unpack(const struct fx *f, const struct blob *l, size_t n, unsigned long long max,
		  struct err *e)
{
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	make_docker_archive(f->image, l, n, 0);
	return image_unpack_progress(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, false, max, e);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* ---- memory ------------------------------------------------------------------- */

/* symlink(2) takes a target of at most PATH_MAX - 1 bytes: a longer one
 * (the review's 1 MB targets) is refused by both writers, in the same words,
 * naming the layer and the member; one byte less is an image like any. */
static void test_a_symlink_target_of_path_max_bytes_is_refused(void **state)
{
	struct fx *f = *state;
	char *target = repeat('t', PATH_MAX);
	struct member m[] = { { "ok", 'f', "x\n", 0 }, { "long", 'l', target, 0 } };
	struct blob l = raw_tar(m, 2);
	struct err e1 = { 0 }, e2 = { 0 };

	assert_int_equal(unpack(f, &l, 1, 0, &e1), -1);
	assert_int_equal(stream_one(f, l, NULL, NULL, &e2), -1);
	/* The same words after the layer's name (an archive's names its file). */
	assert_non_null(strstr(e1.msg, strstr(e2.msg, "member 'long'")));
	assert_int_equal(e2.code, EXIT_CTRUN);
	assert_non_null(strstr(e2.msg, "layer 1 (sha256:x): member 'long': its symlink target is "
				       "4096 bytes or longer"));
	assert_null(strchr(e2.msg, '\n'));
	blob_free(&l);

	target[PATH_MAX - 1] = '\0'; /* 4095 bytes: what symlink(2) takes */
	l = raw_tar(m, 2);
	assert_int_equal(unpack(f, &l, 1, 0, &e1), 0);
	assert_int_equal(stream_one(f, l, NULL, NULL, &e2), 0);
	blob_free(&l);
	free(target);
}

/* A hard-link target and a name: the same bound. */
static void test_a_name_or_hard_link_target_of_path_max_bytes_is_refused(void **state)
{
	struct fx *f = *state;
	char *name = repeat('n', PATH_MAX);
	struct member hl[] = { { "ok", 'f', "x\n", 0 }, { "h", 'h', name, 0 } };
	struct member nm[] = { { name, 'l', "ok", 0 } };
	struct blob l = raw_tar(hl, 2);
	struct err e = { 0 };

	assert_int_equal(stream_one(f, l, NULL, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "member 'h': its hard-link target is 4096 bytes or longer"));
	blob_free(&l);
	l = raw_tar(nm, 1);
	assert_int_equal(stream_one(f, l, NULL, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "its name is 4096 bytes or longer"));
	assert_non_null(strstr(e.msg, "nnnn...'")); /* quoted in part: one short line */
	assert_true(strlen(e.msg) < 300);
	blob_free(&l);
	free(name);
}

/* 64 symlinks with 4000-byte targets are 64 headers and 256,000 bytes of
 * targets: over a 128 KiB max_unpacked, in both writers (512 bytes a member
 * would have counted 32 KiB). */
static void test_names_and_targets_count_against_max_unpacked(void **state)
{
	struct fx *f = *state;
	char *target = repeat('t', 4000), names[64][16];
	struct member m[64];
	struct unpack_limit lim = { .image = "links", .max = 128 * KiB };
	struct blob l;
	struct err e1 = { 0 }, e2 = { 0 };

	for (int i = 0; i < 64; i++) {
		snprintf(names[i], sizeof(names[i]), "l%d", i);
		m[i] = (struct member){ names[i], 'l', target, 0 };
	}
	l = raw_tar(m, 64);
	assert_int_equal(unpack(f, &l, 1, 128 * KiB, &e1), -1);
	assert_non_null(strstr(e1.msg, "unpacks to more than 128 KiB"));
	assert_int_equal(stream_one(f, l, &lim, NULL, &e2), -1);
	assert_non_null(strstr(e2.msg, "image links unpacks to more than 128 KiB"));
	/* Each member cost its header, its name and its target. */
	assert_true(lim.used > 128 * KiB && lim.used <= 128 * KiB + 512 + 4000 + 8);
	/* Under a bound they fit in, both writers take them. */
	lim = (struct unpack_limit){ .image = "links", .max = 64 * (512 + 4000 + 4) };
	assert_int_equal(stream_one(f, l, &lim, NULL, &e2), 0);
	assert_int_equal(unpack(f, &l, 1, 64 * (512 + 4000 + 4), &e1), 0);
	blob_free(&l);
	free(target);
}

/* The tree counts what it holds in bytes: a name and a target as long as
 * they are, given back when the name goes (an inode stays until the end). */
static void test_the_tree_counts_names_and_targets_in_bytes(void **state)
{
	struct mtree t;
	char *name = repeat('n', 250), *target = repeat('t', 4000);
	struct minode *dir, *link;
	struct mnode *d, *n;
	size_t before, with_dir;

	(void)state;
	mtree_init(&t, 0);
	dir = mtree_inode(&t, S_IFDIR | 0755);
	d = mtree_link(&t, &t.root, "d", dir);
	assert_non_null(d);
	with_dir = t.bytes;
	/* The lookup table starts at 4096 slots. */
	assert_true(with_dir >= sizeof(struct minode) + sizeof(struct mnode) + 4096 * sizeof(void *));
	link = mtree_inode(&t, S_IFLNK | 0777);
	assert_int_equal(mtree_set_target(&t, link, target, 4000), 0);
	assert_true(t.bytes >= with_dir + sizeof(struct minode) + 4000);
	before = t.bytes;
	n = mtree_link(&t, d, name, link);
	assert_non_null(n);
	assert_true(t.bytes >= before + sizeof(struct mnode) + 250);
	mtree_remove(&t, d); /* d and the link's name */
	assert_true(t.bytes < before);
	assert_true(t.bytes >= with_dir - sizeof(struct mnode) - 8); /* the inodes stay */
	mtree_free(&t, NULL);
	assert_int_equal(t.bytes, 0);
	free(name);
	free(target);
}

/* A layer of many names stops at [registry] max_tree in one line naming the
 * layer and the setting; without the bound the same layer is pulled. */
static void test_a_tree_over_max_tree_is_refused_naming_the_layer(void **state)
{
	struct fx *f = *state;
	enum { N = 4000 };
	struct member *m = calloc(N, sizeof(*m));
	char (*names)[96] = calloc(N, sizeof(*names));
	struct unpack_limit lim = { .image = "many", .max_tree = 512 * KiB };
	struct blob l;
	struct err e = { 0 };

	assert_true(m != NULL && names != NULL);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "dir%d/%s%d", i % 8,
			 "a-name-of-about-eighty-bytes-as-python-packages-have-them-", i);
		m[i] = (struct member){ names[i], 'f', "", 0 };
	}
	l = raw_tar(m, N);
	assert_int_equal(stream_one(f, l, &lim, NULL, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_string_equal(e.msg, "layer 1 (sha256:x): the image's file tree takes more than "
				   "512 KiB of memory, the limit of [registry] max_tree "
				   "(CTRUN_REGISTRY_MAX_TREE): raise it if the image is meant to "
				   "hold that many names");
	lim.max_tree = 0;
	assert_int_equal(stream_one(f, l, &lim, NULL, &e), 0);
	blob_free(&l);
	free(m);
	free(names);
}

/* ---- hard links carrying data ------------------------------------------------- */

/* The names (NULL-terminated) under root are one inode holding `content`. */
static void assert_one_file(const char *root, const char *const *names, const char *content)
{
	struct stat first, st;
	char path[256];
	size_t n = 0;

	for (size_t i = 0; names[i] != NULL; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, names[i]);
		assert_int_equal(lstat(path, i == 0 ? &first : &st), 0);
		if (i > 0 && (st.st_ino != first.st_ino || st.st_dev != first.st_dev))
			fail_msg("%s is not a name of %s/%s", path, root, names[0]);
		assert_content(path, content);
		n++;
	}
	assert_int_equal(first.st_nlink, n); /* and no other name */
}

/* pax lets a hard link carry data: it becomes the file's, for every name of
 * it, lower layers' names included; both writers agree, name for name. */
static void hard_links_carrying_data_give_every_name_the_data(void **state)
{
	static const char *const four[] = { "f", "g", "h", "i", NULL };
	static const char *const three[] = { "d/x", "d/y", "d/z", NULL };
	struct fx *f = *state;
	const struct member l1[] = {
		{ "f", 'f', "old\n", 0 },
		{ "g", 'h', "f", 0 },
		{ "d/x", 'f', "other\n", 0 },
	};
	const struct member l2[] = {
		{ "h", 'H', "f", 0, 0, 0, "new\n" },
		{ "i", 'h', "g", 0 },
		{ "d/y", 'H', "d/x", 0, 0, 0, "first\n" },
		{ "d/z", 'H', "d/y", 0, 0, 0, "second\n" },
	};
	struct blob l[2] = { raw_tar(l1, 3), raw_tar(l2, 4) };
	char sq[160], sqsh[200], *a, *b;
	struct err e = { 0 };

	snprintf(sq, sizeof(sq), "%s/sq", f->dir);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	assert_int_equal(unpack(f, l, 2, 0, &e), 0);
	assert_int_equal(stream_layers(f->dir, l, 2, NULL, NULL, &e), 0);
	assert_int_equal(mkdir(sq, 0755), 0);
	unsquash(sqsh, sq);
	a = list_tree(f->dest);
	b = list_tree(sq);
	assert_string_equal(a, b);
	assert_one_file(f->dest, four, "new\n");
	assert_one_file(sq, four, "new\n");
	assert_one_file(f->dest, three, "second\n");
	assert_one_file(sq, three, "second\n");
	free(a);
	free(b);
	blob_free(&l[0]);
	blob_free(&l[1]);
}

/* n files, each followed by a hard link to it carrying data (the review's
 * 24,000 pairs took 7.4 s): the tree's probes. */
static unsigned long long pairs_probes(const struct fx *f, int n)
{
	struct member *m = calloc((size_t)n * 2, sizeof(*m));
	char (*names)[32] = calloc((size_t)n * 2, sizeof(*names));
	unsigned long long probes = 0;
	struct blob l;
	struct err e = { 0 };

	assert_true(m != NULL && names != NULL);
	for (int i = 0; i < n; i++) {
		snprintf(names[2 * i], sizeof(names[0]), "f%d", i);
		snprintf(names[2 * i + 1], sizeof(names[0]), "h%d", i);
		m[2 * i] = (struct member){ names[2 * i], 'f', "a", 0 };
		m[2 * i + 1] = (struct member){ names[2 * i + 1], 'H', names[2 * i], 0, 0, 0, "b" };
	}
	l = raw_tar(m, (size_t)n * 2);
	assert_int_equal(stream_one(f, l, NULL, &probes, &e), 0);
	blob_free(&l);
	free(m);
	free(names);
	return probes;
}

/* A few probes a member, plus `once` (a walk of a directory at most once),
 * however many members: linear. */
static void assert_linear(const char *what, unsigned long long probes, unsigned long long members,
			  unsigned long long per, unsigned long long once)
{
	print_message("%s: %llu probes for %llu members\n", what, probes, members);
	if (probes == 0 || probes > per * members + once)
		fail_msg("%s: %llu probes, more than %llu a member", what, probes, per);
}

/* What a hard link carrying data does, at a few probes a member (a walk of
 * the table per link was thousands). */
static void test_hard_links_carrying_data_cost_linear_probes(void **state)
{
	hard_links_carrying_data_give_every_name_the_data(state);
	assert_linear("1,000 pairs", pairs_probes(*state, 1000), 2000, 4, 0);
	assert_linear("4,000 pairs", pairs_probes(*state, 4000), 8000, 4, 0);
}

/* A directory of 2,000 files in layer 1; in layer 2, 2,000 files of its
 * own there, then m opaque markers for it: the probes of layer 2. */
static unsigned long long opaque_probes(const struct fx *f, int m)
{
	struct member *l1 = calloc(2000, sizeof(*l1)), *l2 = calloc(2000 + (size_t)m, sizeof(*l2));
	char (*names)[32] = calloc(4000, sizeof(*names));
	struct sqimage_opts o = { .comp = SQ_GZIP, .level = 1, .threads = 2 };
	unsigned long long before = 0, probes;
	struct sqimage *s = NULL;
	struct mnode *d;
	struct blob b[2];
	struct err e = { 0 };
	char sqsh[200];
	int fd, out, kept = 0;

	assert_true(l1 != NULL && l2 != NULL && names != NULL);
	for (int i = 0; i < 2000; i++) {
		snprintf(names[i], sizeof(names[0]), "d/lower%d", i);
		snprintf(names[2000 + i], sizeof(names[0]), "d/own%d", i);
		l1[i] = (struct member){ names[i], 'f', "a", 0 };
		l2[i] = (struct member){ names[2000 + i], 'f', "b", 0 };
	}
	for (int i = 0; i < m; i++)
		l2[2000 + i] = (struct member){ "d/.wh..wh..opq", 'f', "", 0 };
	b[0] = raw_tar(l1, 2000);
	b[1] = raw_tar(l2, 2000 + (size_t)m);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	assert_int_equal(sqimage_open(&s, out, &o, &e), 0);
	for (int i = 0; i < 2; i++) {
		write_blob(f->image, b[i]);
		fd = open(f->image, O_RDONLY);
		assert_true(fd >= 0);
		before = sqimage_tree(s)->probes;
		assert_int_equal(layerfile_apply(fd, (size_t)i, "sha256:x", s, NULL, &e), 0);
		close(fd);
		blob_free(&b[i]);
	}
	probes = sqimage_tree(s)->probes - before;
	/* What the markers did: the lower files gone, the layer's own kept. */
	d = mtree_child(sqimage_tree(s), &sqimage_tree(s)->root, "d");
	assert_non_null(d);
	for (struct mnode *k = d->kids; k != NULL; k = k->next, kept++)
		assert_int_equal(strncmp(k->name, "own", 3), 0);
	assert_int_equal(kept, 2000);
	sqimage_free(s);
	close(out);
	free(l1);
	free(l2);
	free(names);
	return probes;
}

/* The first marker clears the directory (4,000 entries); the next ones of
 * the layer find only the layer's own entries and walk nothing (each used
 * to walk all 2,000). */
static void test_repeated_opaque_markers_cost_linear_probes(void **state)
{
	assert_linear("500 markers", opaque_probes(*state, 500), 2500, 16, 4000);
	assert_linear("2,000 markers", opaque_probes(*state, 2000), 4000, 16, 4000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_symlink_target_of_path_max_bytes_is_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_name_or_hard_link_target_of_path_max_bytes_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_and_targets_count_against_max_unpacked,
						setup, teardown),
		cmocka_unit_test(test_the_tree_counts_names_and_targets_in_bytes),
		cmocka_unit_test_setup_teardown(test_a_tree_over_max_tree_is_refused_naming_the_layer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_carrying_data_cost_linear_probes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeated_opaque_markers_cost_linear_probes,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
