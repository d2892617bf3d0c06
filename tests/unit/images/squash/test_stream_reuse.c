/* Unit tests: an image built on a stored one (layer reuse: sqstored.c,
 * sqimage_base) is the image a full conversion of all its layers makes:
 * random layers of files, directories, symlinks, hard links (into the
 * stored image too), whiteouts and opaque markers, streamed once whole and
 * once as a stored image of their first k layers plus the rest, unpacked
 * and compared; the named cases (a whiteout removes a stored file, an
 * opaque marker hides a stored directory's contents, a replaced file
 * wins); and a stored image that cannot be a base is refused. */
#define CTRTEST_STREAM
#include "ctrtest.h"

/* The stored image dir/base/image.sqsh (its first layers) plus the layers l
 * (n of them) and the config "{}" into dir/image.sqsh.  0, or -1 with e. */
static int stream_on_base(const char *dir, unsigned k, const struct blob *l, size_t n,
			  const struct sqimage_opts *o, struct err *e)
{
	char path[256], sqsh[256];
	struct sqimage *s = NULL;
	unsigned long long unpacked = 0;
	int out, in, fd, rv = -1;

	snprintf(path, sizeof(path), "%s/base/image.sqsh", dir);
	in = open(path, O_RDONLY);
	assert_true(in >= 0);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	if (sqimage_open(&s, out, o, e) < 0 || sqimage_base(s, in, k, &unpacked, e) < 0)
		goto done;
	for (size_t i = 0; i <= n; i++) {
		snprintf(path, sizeof(path), "%s/blob%zu", dir, i);
		write_blob(path, i < n ? l[i] : (struct blob){ (char *)"{}", 2 });
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		rv = i < n ? layerfile_apply(fd, k + i, "sha256:x", s, NULL, e)
			   : layerfile_config(fd, s, e);
		close(fd);
		unlink(path);
		if (rv < 0)
			goto done;
	}
	rv = sqimage_finish(s, e);
done:
	sqimage_free(s);
	close(out);
	close(in);
	return rv;
}

/* Layers l streamed whole and as base (first k) + the rest: the same
 * result, and the same tree.  -1 when the base itself fails. */
static int compare(struct fx *f, const struct blob *l, size_t n, unsigned k, const char *what)
{
	const struct sqimage_opts o = { .comp = SQ_LZ4, .threads = 2 };
	char base[160], sq[160], sqsh[200];
	struct err e1 = { 0 }, e2 = { 0 };
	char *a, *b;
	int r1, r2;

	snprintf(base, sizeof(base), "%s/base", f->dir);
	snprintf(sq, sizeof(sq), "%s/sq", f->dir);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	remove_tree(base);
	assert_int_equal(mkdir(base, 0700), 0);
	if (stream_layers(base, l, k, NULL, &o, &e1) < 0)
		return -1;
	r2 = stream_on_base(f->dir, k, l + k, n - k, &o, &e2);
	remove_tree(sq);
	assert_int_equal(mkdir(sq, 0755), 0);
	if (r2 == 0)
		unsquash(sqsh, sq);
	r1 = stream_layers(f->dir, l, n, NULL, &o, &e1);
	if (r1 != r2)
		fail_msg("%s: whole %d (%s), on the stored image %d (%s)", what, r1, e1.msg, r2,
			 e2.msg);
	if (r1 < 0)
		return 0;
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	unsquash(sqsh, f->dest);
	a = list_tree(f->dest);
	b = list_tree(sq);
	if (strcmp(a, b) != 0)
		fail_msg("%s:\nwhole:\n%s\non the stored image:\n%s", what, a, b);
	free(a);
	free(b);
	return 1;
}

static void test_random_layers_on_a_stored_image(void **state)
{
	struct fx *f = *state;
	int cases = 300, agreed = 0;

	umask(022);
	for (int c = 0; c < cases; c++) {
		struct layerspec spec[5];
		struct blob l[5];
		size_t n = 2 + (size_t)pick(4);
		unsigned k;
		char what[32];

		rng = 0x2545f4914f6cdd1dULL * (unsigned long long)(c + 1);
		nfiles = 0;
		k = 1 + pick((unsigned)n - 1);
		for (size_t i = 0; i < n; i++) {
			rand_layer(&spec[i]);
			l[i] = tar_blob(spec[i].m, spec[i].n, 0);
		}
		snprintf(what, sizeof(what), "case %d (%u of %zu stored)", c, k, n);
		agreed += compare(f, l, n, k, what) == 1;
		for (size_t i = 0; i < n; i++)
			blob_free(&l[i]);
	}
	if (agreed < cases / 6)
		fail_msg("only %d of %d cases built", agreed, cases);
}

/* The layer rules across the stored image's edge, by name. */
static void test_later_layers_win_over_the_stored_image(void **state)
{
	struct fx *f = *state;
	char big[300000];
	const struct member l1[] = {
		{ "etc/motd", 'f', "old motd\n", 0 },
		{ "etc/motd.link", 'h', "etc/motd", 0 },
		{ "etc/gone", 'f', "deleted later\n", 0 },
		{ "opt/old/a", 'f', "hidden later\n", 0 },
		{ "usr/big", 'f', big, sizeof(big) },
		{ "lib", 'l', "usr/lib", 0 },
	};
	const struct member l2[] = {
		{ "etc/.wh.gone", 'f', "", 0 },
		{ "opt/.wh..wh..opq", 'f', "", 0 },
		{ "opt/new", 'f', "new\n", 0 },
		{ "etc/motd", 'f', "new motd\n", 0 },
		{ "lib/x", 'f', "through the link\n", 0 },
		{ "etc/big.link", 'h', "usr/big", 0 },
	};
	struct blob l[2];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)pick(256);
	l[0] = tar_blob(l1, sizeof(l1) / sizeof(*l1), 1);
	l[1] = tar_blob(l2, sizeof(l2) / sizeof(*l2), 1);
	assert_int_equal(compare(f, l, 2, 1, "named"), 1);
	/* compare() left the whole image in f->dest (equal to the other). */
	assert_false(present(in(f, "etc/gone")));
	assert_false(present(in(f, "opt/old")));
	assert_content(in(f, "opt/new"), "new\n");
	assert_content(in(f, "etc/motd"), "new motd\n");
	assert_content(in(f, "etc/motd.link"), "old motd\n");
	assert_content(in(f, "usr/lib/x"), "through the link\n");
	blob_free(&l[0]);
	blob_free(&l[1]);
}

/* A stored image of another compressor is no base: refused before the
 * new image holds anything of it. */
static void test_another_compressor_is_refused(void **state)
{
	struct fx *f = *state;
	const struct sqimage_opts gz = { .comp = SQ_GZIP, .level = 1, .threads = 2 };
	const struct sqimage_opts lz = { .comp = SQ_LZ4, .threads = 2 };
	const struct member m[] = { { "etc/motd", 'f', "hello\n", 0 } };
	struct blob l = tar_blob(m, 1, 0);
	char base[160];
	struct err e = { 0 };

	snprintf(base, sizeof(base), "%s/base", f->dir);
	assert_int_equal(mkdir(base, 0700), 0);
	assert_int_equal(stream_layers(base, &l, 1, NULL, &gz, &e), 0);
	assert_int_equal(stream_on_base(f->dir, 1, &l, 1, &lz, &e), -1);
	assert_non_null(strstr(e.msg, "another compressor"));
	blob_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_random_layers_on_a_stored_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_later_layers_win_over_the_stored_image, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_another_compressor_is_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
