/* Unit tests: layers streamed into a squashfs (a registry pull: mlayer.c,
 * sqimage.c) give the tree the same layers give unpacked on disk (layer.c),
 * member for member: random layers of files, directories, symlinks
 * (relative, absolute, climbing out, dangling), hard links, whiteouts and
 * opaque markers are applied both ways and the trees compared; and what
 * the stream adds: the sanitizing of sanitize.c, the data of replaced files
 * squeezed out, every compressor readable. */
#define CTRTEST_STREAM
#include "ctrtest.h"

#define MiB (1u << 20)

static void test_random_layers_stream_as_they_unpack(void **state)
{
	struct fx *f = *state;
	char tree[160], sq[160], sqsh[200];
	int cases = 600, agreed = 0;

	umask(022); /* the directories libarchive makes implicitly: 0755 */
	snprintf(tree, sizeof(tree), "%s/tree", f->dir);
	snprintf(sq, sizeof(sq), "%s/sq", f->dir);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	for (int c = 0; c < cases; c++) {
		struct layerspec spec[4];
		struct blob l[4];
		struct err e1 = { 0 }, e2 = { 0 };
		size_t n = 2 + (size_t)pick(3);
		int r1, r2;

		rng = 0x9e3779b97f4a7c15ULL * (unsigned long long)(c + 1);
		nfiles = 0;
		for (size_t i = 0; i < n; i++) {
			rand_layer(&spec[i]);
			l[i] = tar_blob(spec[i].m, spec[i].n, 0);
		}
		remove_tree(tree);
		remove_tree(sq);
		assert_int_equal(mkdir(tree, 0755), 0);
		assert_int_equal(mkdir(sq, 0755), 0);
		make_docker_archive(f->image, l, n, 0);
		r1 = image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, tree, &e1);
		r2 = stream_layers(f->dir, l, n, NULL, NULL, &e2);
		if (r1 != r2) {
			for (size_t i = 0; i < n; i++)
				for (size_t k = 0; k < spec[i].n; k++)
					fprintf(stderr, "layer %zu: %c %s -> %s\n", i + 1, spec[i].m[k].type,
						spec[i].m[k].name, spec[i].m[k].data ? spec[i].m[k].data : "");
			fail_msg("case %d: unpacked %d (%s), streamed %d (%s)", c, r1, e1.msg, r2,
				 e2.msg);
		}
		if (r1 == 0) {
			char *a, *b;

			unsquash(sqsh, sq);
			a = list_tree(tree);
			b = list_tree(sq);
			if (strcmp(a, b) != 0) {
				for (size_t i = 0; i < n; i++)
					for (size_t k = 0; k < spec[i].n; k++)
						fprintf(stderr, "layer %zu: %c %s -> %s\n", i + 1,
							spec[i].m[k].type, spec[i].m[k].name,
							spec[i].m[k].data ? spec[i].m[k].data : "");
				fail_msg("case %d:\nunpacked:\n%s\nstreamed:\n%s", c, a, b);
			}
			free(a);
			free(b);
			agreed++;
		}
		for (size_t i = 0; i < n; i++)
			blob_free(&l[i]);
	}
	/* Most cases succeed: the comparison is not vacuous. */
	if (agreed < cases / 6)
		fail_msg("only %d of %d cases unpacked", agreed, cases);
}

/* ---- what the stream does besides ------------------------------------------ */

/* sanitize.c's rules: no FIFO, no setuid/setgid, nothing group/other-writable;
 * every inode root's (mksquashfs -all-root). */
static void test_streamed_image_is_sanitized_and_roots(void **state)
{
	struct fx *f = *state;
	const struct member m[] = {
		{ "bin/su", 'f', "x\n", 0, 1000, 06755 },
		{ "shared", 'd', NULL, 0, 1000, 01777 },
		{ "open", 'd', NULL, 0, 0, 0777 },
		{ "pipe", 'p', NULL, 0 },
	};
	struct blob l = tar_blob(m, 4, 0);
	struct err e = { 0 };
	char sqsh[200];
	struct stat st;

	assert_int_equal(stream_layers(f->dir, &l, 1, NULL, NULL, &e), 0);
	blob_free(&l);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	unsquash(sqsh, f->dest);
	assert_int_equal(lstat(in(f, "bin/su"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(lstat(in(f, "shared"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 01755);
	assert_int_equal(lstat(in(f, "open"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_false(present(in(f, "pipe")));
}

/* A later layer deletes a large file and replaces another: their blocks
 * were written already, and are squeezed out (the image holds one copy). */
static void test_replaced_data_is_squeezed_out(void **state)
{
	struct fx *f = *state;
	char *big = malloc(3 * MiB / 2), *other = malloc(3 * MiB / 2), sqsh[200];
	struct member l1[2] = { { "big", 'f', big, 3 * MiB / 2 }, { "kept", 'f', other, 3 * MiB / 2 } };
	const struct member l2[] = { { ".wh.big", 'f', "", 0 }, { "small", 'f', "small\n", 0 } };
	struct blob l[2];
	struct err e = { 0 };
	struct stat st;

	assert_non_null(big);
	assert_non_null(other);
	for (size_t i = 0; i < 3 * MiB / 2; i++) { /* incompressible */
		big[i] = (char)pick(256);
		other[i] = (char)pick(256);
	}
	l[0] = tar_blob(l1, 2, 0);
	l[1] = tar_blob(l2, 2, 0);
	assert_int_equal(stream_layers(f->dir, l, 2, NULL, NULL, &e), 0);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	assert_int_equal(stat(sqsh, &st), 0);
	/* One file's data, not two. */
	assert_true(st.st_size > 3 * MiB / 2 && st.st_size < 2 * MiB);
	unsquash(sqsh, f->dest);
	assert_false(present(in(f, "big")));
	assert_int_equal(stat(in(f, "kept"), &st), 0);
	assert_int_equal(st.st_size, 3 * MiB / 2);
	assert_content(in(f, "small"), "small\n");
	blob_free(&l[0]);
	blob_free(&l[1]);
	free(big);
	free(other);
}

/* Each compressor ctrun may write (and raw data blocks) is read back. */
static void test_every_compressor_reads_back(void **state)
{
	struct fx *f = *state;
	const struct sqimage_opts opts[] = {
		{ .comp = SQ_GZIP, .level = 1 }, { .comp = SQ_LZ4 }, { .comp = SQ_ZSTD, .level = 3 },
		{ .comp = SQ_XZ }, { .comp = SQ_GZIP, .raw_data = true },
	};
	const struct member m[] = { { "etc/motd", 'f', "hello\n", 0 }, { "lib", 'l', "usr/lib", 0 } };
	struct blob l = tar_blob(m, 2, 1);

	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++) {
		struct err e = { 0 };
		char sqsh[200];

		remove_tree(f->dest);
		assert_int_equal(mkdir(f->dest, 0755), 0);
		assert_int_equal(stream_layers(f->dir, &l, 1, "{\"config\":{\"Env\":[\"A=1\"]}}",
					       &opts[i], &e), 0);
		snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
		unsquash(sqsh, f->dest);
		assert_content(in(f, "etc/motd"), "hello\n");
		assert_content(in(f, "etc/environment"), "A=1\n");
	}
	blob_free(&l);
}

/* A layer that is not a tar fails naming the layer, and nothing is half-made
 * that a caller could take for an image (the caller removes the file). */
static void test_a_broken_layer_fails_by_name(void **state)
{
	struct fx *f = *state;
	struct blob l = { strdup("this is not a tar archive, not even close to one......"), 0 };
	struct err e = { 0 };

	l.len = strlen(l.data);
	assert_int_equal(stream_layers(f->dir, &l, 1, NULL, NULL, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "layer 1 (sha256:x)"));
	blob_free(&l);
}

/* A gzip bomb stops at [cache] max_unpacked while it streams, as it does
 * when it is unpacked (test_bounds.c). */
static void test_a_bomb_layer_stops_at_the_limit(void **state)
{
	struct fx *f = *state;
	struct sqimage_opts o = { .comp = SQ_GZIP, .level = 1 };
	char *zeros = calloc(1, 3 * MiB), sqsh[200];
	struct member m = { "zeros", 'f', zeros, 3 * MiB };
	struct blob b = tar_blob(&m, 1, 1);
	struct unpack_limit lim = { .image = "bomb", .max = MiB };
	struct sqimage *s;
	struct err e = { 0 };
	int fd, out;

	assert_true(b.len < 64 * 1024);
	write_blob(f->image, b);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_EXCL, 0600);
	fd = open(f->image, O_RDONLY);
	assert_true(out >= 0 && fd >= 0);
	assert_int_equal(sqimage_open(&s, out, &o, &e), 0);
	assert_int_equal(layerfile_apply(fd, 0, "sha256:x", s, &lim, &e), -1);
	assert_non_null(strstr(e.msg, "image bomb unpacks to more than 1 MiB"));
	assert_true(lim.used <= MiB + 128 * 1024);
	sqimage_free(s);
	close(fd);
	close(out);
	blob_free(&b);
	free(zeros);
}

/* [registry] / [cache] compression: what may be named, and how it reads back. */
static void test_compressor_settings(void **state)
{
	static const struct {
		const char *spec, *name, *args;
	} ok[] = {
		{ "gzip", "gzip", "-comp gzip" },
		{ "gzip:1", "gzip:1", "-comp gzip -Xcompression-level 1" },
		{ "lz4", "lz4", "-comp lz4" },
		{ "lz4:hc", "lz4:hc", "-comp lz4 -Xhc" },
		{ "zstd:22", "zstd:22", "-comp zstd -Xcompression-level 22" },
		{ "xz:0", "xz:0", "-comp xz" },
		{ "none", "none", "-noD -noF" },
	};
	static const char *const bad[] = { "", "zip", "gzip:0", "gzip:10", "zstd:", "zstd:3x",
					   "lz4:2", "none:1", "gzip:-1", "zstd:1:2" };
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		struct sqimage_opts o;
		struct err e = { 0 };
		const char *argv[8];
		char name[32], level[16], args[128] = "";
		size_t n;

		assert_int_equal(sqimage_comp_parse(ok[i].spec, "[registry] compression", &o, &e), 0);
		assert_string_equal(sqimage_comp_name(&o, name, sizeof(name)), ok[i].name);
		n = sqimage_comp_args(&o, level, sizeof(level), argv);
		for (size_t k = 0; k < n; k++)
			snprintf(args + strlen(args), sizeof(args) - strlen(args), "%s%s", k ? " " : "",
				 argv[k]);
		assert_string_equal(args, ok[i].args);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct sqimage_opts o;
		struct err e = { 0 };

		if (sqimage_comp_parse(bad[i], "[registry] compression", &o, &e) == 0)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, "[registry] compression"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_random_layers_stream_as_they_unpack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamed_image_is_sanitized_and_roots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_data_is_squeezed_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_compressor_reads_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_broken_layer_fails_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_bomb_layer_stops_at_the_limit, setup, teardown),
		cmocka_unit_test(test_compressor_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
