/* Unit tests: what a layer's compression may cost (issue 41, point 1).
 *
 * A pulled layer is a tar, gzip or zstd (the OCI image spec's layers),
 * whatever its media type says: any other compression is refused by its
 * magic bytes before a decoder is set up, in one line naming the layer and
 * the compression.  An archive given as --image FILE, and each layer in
 * it, may also be bzip2, compress or lz4, never xz, lzma or lzip: their
 * header sets liblzma's dictionary (up to 4 GiB for xz) and libarchive
 * gives liblzma no memory limit.  zstd's window is bounded at 128 MiB by
 * libzstd's default, which libarchive keeps; data compressed twice is
 * refused (libarchive would stack up to 25 decoders).
 *
 * The hostile layer is a few hundred bytes of xz whose block header asks
 * for a 4 GiB dictionary.  It is read in a child whose address space is
 * limited to 1 GiB (not under ASan, whose shadow is address space
 * already), where the reader that trusted the header failed to allocate
 * the dictionary ("Cannot allocate memory") instead of refusing the layer;
 * without the limit it took as much of the dictionary as the data filled. */
#define CTRTEST_STREAM
#include "ctrtest.h"

#define MiB (1u << 20)

/* ---- compressed bytes --------------------------------------------------------- */

/* data compressed with libarchive's writer's filter `name` ("xz", "lz4"...),
 * its option `opt` set where not NULL ("xz:compression-level=0"). */
static struct blob compress_as(struct blob data, const char *name, const char *opt)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ent = archive_entry_new();
	size_t cap = data.len + (1u << 16), used = 0;
	struct blob b = { malloc(cap), 0 };

	assert_non_null(b.data);
	assert_int_equal(archive_write_add_filter_by_name(a, name), ARCHIVE_OK);
	assert_int_equal(archive_write_set_format_raw(a), ARCHIVE_OK);
	if (opt != NULL)
		assert_int_equal(archive_write_set_options(a, opt), ARCHIVE_OK);
	archive_write_set_bytes_in_last_block(a, 1);
	assert_int_equal(archive_write_open_memory(a, b.data, cap, &used), ARCHIVE_OK);
	archive_entry_set_pathname(ent, "data");
	archive_entry_set_filetype(ent, AE_IFREG);
	archive_entry_set_size(ent, (la_int64_t)data.len);
	assert_int_equal(archive_write_header(a, ent), ARCHIVE_OK);
	assert_int_equal(archive_write_data(a, data.data, data.len), (la_ssize_t)data.len);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(ent);
	b.len = used;
	return b;
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

/* A small tar as xz whose (only) block header asks for a dictionary of
 * 4 GiB - 1 (LZMA2's largest, property 40): compressed with a 256 KiB one,
 * then the property and the header's CRC32 rewritten, so that the data
 * decode the same with the larger dictionary (xz file format 1.1, 3.1). */
static struct blob hostile_xz(void)
{
	struct member m = { "etc/motd", 'f', "hello\n", 0 };
	struct blob tar = tar_blob(&m, 1, 0), xz = compress_as(tar, "xz", "xz:compression-level=0");
	unsigned char *h = (unsigned char *)xz.data + 12; /* after the stream header */
	size_t size = ((size_t)h[0] + 1) * 4;
	uint32_t crc;

	blob_free(&tar);
	/* One filter, no sizes; LZMA2 (0x21) with one property byte. */
	assert_int_equal(h[1], 0);
	assert_int_equal(h[2], 0x21);
	assert_int_equal(h[3], 1);
	h[4] = 40;
	crc = crc32_of(h, size - 4);
	for (int i = 0; i < 4; i++)
		h[size - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
	assert_true(xz.len < 1024);
	return xz;
}

/* A zstd frame of raw blocks holding data, whose header asks for a window
 * of 2^wlog bytes; wlog 0: a single segment whose content size says 4 GiB. */
static struct blob zstd_frame(struct blob data, int wlog)
{
	struct blob b = { malloc(data.len + 64 + data.len / 1000), 0 };
	size_t off = 0;

	assert_non_null(b.data);
	memcpy(b.data, "\x28\xb5\x2f\xfd", 4);
	b.len = 4;
	if (wlog == 0) {
		uint64_t fcs = 4ull << 30;

		b.data[b.len++] = (char)0xe0; /* 8-byte content size, single segment */
		for (int i = 0; i < 8; i++)
			b.data[b.len++] = (char)(fcs >> (8 * i));
	} else {
		b.data[b.len++] = 0;
		b.data[b.len++] = (char)((wlog - 10) << 3);
	}
	do { /* raw blocks of at most 64 KiB, the last one marked */
		size_t n = data.len - off < 65536 ? data.len - off : 65536;
		uint32_t hdr = (uint32_t)(off + n == data.len) | (uint32_t)n << 3;

		for (int i = 0; i < 3; i++)
			b.data[b.len++] = (char)(hdr >> (8 * i));
		memcpy(b.data + b.len, data.data + off, n);
		b.len += n;
		off += n;
	} while (off < data.len);
	return b;
}

static struct blob small_tar(void)
{
	struct member m[] = { { "etc/motd", 'f', "hello\n", 0 }, { "bin", 'd', NULL, 0 } };

	return tar_blob(m, 2, 0);
}

/* ---- the two readers, in a child limited to 1 GiB of address space ------------- */

/* The layer streamed alone into a new squashfs, as a pull applies it: 0, or
 * -1 with e.  No cmocka assertion: it runs in a child. */
static int stream(const struct fx *f, struct blob l, struct err *e)
{
	struct sqimage_opts o = { .comp = SQ_GZIP, .level = 1, .threads = 2 };
	char sqsh[200];
	struct sqimage *s = NULL;
	int fd, out, rv = -1;

	write_blob(f->image, l);
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_TRUNC, 0600);
	fd = open(f->image, O_RDONLY);
	if (out < 0 || fd < 0)
		err_set(e, 1, "test: cannot open %s", f->image);
	else if (sqimage_open(&s, out, &o, e) == 0 &&
		 (rv = layerfile_apply(fd, 1, "sha256:x", s, NULL, e)) == 0)
		rv = sqimage_finish(s, e);
	sqimage_free(s);
	if (fd >= 0)
		close(fd);
	if (out >= 0)
		close(out);
	return rv;
}

/* The file at f->image (written by the caller) detected and unpacked into
 * f->dest, as --image FILE is. */
static int unpack(const struct fx *f, struct err *e)
{
	enum image_kind k;

	if (image_detect(f->image, &k, e) < 0)
		return -1;
	if (k != IMAGE_DOCKER_ARCHIVE && k != IMAGE_OCI_ARCHIVE)
		return err_set(e, 1, "test: %s detected as %d", f->image, (int)k);
	return image_unpack(f->image, k, f->dest, e);
}

enum reader { STREAM, UNPACK };

/* The reader run on l (STREAM: the layer; UNPACK: the file, made by the
 * caller) in a child limited to 1 GiB of address space: its return, and
 * its error in *e. */
static int limited(const struct fx *f, enum reader r, struct blob l, struct err *e)
{
	int p[2], status;
	pid_t pid;

	memset(e, 0, sizeof(*e));
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct err ce = { 0 };
		int rv;

		close(p[0]);
		child_limit_as(1024ull * MiB);
		rv = r == STREAM ? stream(f, l, &ce) : unpack(f, &ce);
		if (write(p[1], &ce, sizeof(ce)) != (ssize_t)sizeof(ce))
			_exit(11);
		_exit(rv == 0 ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], e, sizeof(*e)), (ssize_t)sizeof(*e));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status)); /* not killed: its memory was enough */
	assert_true(WEXITSTATUS(status) <= 1);
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Refused: exit 125, one line, `want` in it. */
static void assert_refused(int rv, const struct err *e, const char *want)
{
	if (rv == 0)
		fail_msg("accepted, where '%s' was wanted", want);
	if (e->code != EXIT_CTRUN || strstr(e->msg, want) == NULL || strchr(e->msg, '\n') != NULL)
		fail_msg("the error is '%s' (code %d), where '%s' was wanted", e->msg, e->code, want);
}

/* ---- pulled layers ------------------------------------------------------------ */

/* The review's follow-up: a few hundred bytes whose header asks for 4 GiB. */
static void test_a_pulled_xz_layer_asking_4_gib_is_refused_unread(void **state)
{
	struct fx *f = *state;
	struct blob xz = hostile_xz();
	struct err e;

	assert_refused(limited(f, STREAM, xz, &e), &e,
		       "layer 2 (sha256:x): compressed with xz, which a pulled layer may not be "
		       "(the OCI image spec's layers are tar, gzip or zstd): refused");
	blob_free(&xz);
}

/* Every compression but gzip and zstd, each named; the same tar as gzip,
 * zstd and plain is pulled. */
static void test_a_pulled_layer_is_a_tar_gzip_or_zstd_only(void **state)
{
	static const char *const other[] = { "xz", "lzma", "lzip", "bzip2", "lz4", "compress" };
	struct fx *f = *state;
	struct blob tar = small_tar(), l;
	char want[128];
	struct err e;

	for (size_t i = 0; i < sizeof(other) / sizeof(*other); i++) {
		l = compress_as(tar, other[i], NULL);
		snprintf(want, sizeof(want), "layer 2 (sha256:x): compressed with %s, which a "
			 "pulled layer may not be", other[i]);
		assert_refused(limited(f, STREAM, l, &e), &e, want);
		blob_free(&l);
	}
	assert_int_equal(limited(f, STREAM, tar, &e), 0);
	l = compress_as(tar, "gzip", NULL);
	assert_int_equal(limited(f, STREAM, l, &e), 0);
	blob_free(&l);
	l = zstd_frame(tar, 20);
	assert_int_equal(limited(f, STREAM, l, &e), 0);
	blob_free(&l);
	blob_free(&tar);
}

/* zstd inside gzip: two decoders (and libarchive would stack 25). */
static void test_a_pulled_layer_compressed_twice_is_refused(void **state)
{
	struct fx *f = *state;
	struct blob tar = small_tar(), z = zstd_frame(tar, 20), gz = compress_as(z, "gzip", NULL);
	struct err e;

	assert_refused(limited(f, STREAM, gz, &e), &e,
		       "layer 2 (sha256:x): compressed more than once (zstd inside gzip)");
	blob_free(&gz);
	gz = compress_as(tar, "gzip", NULL);
	blob_free(&z);
	z = compress_as(gz, "gzip", NULL);
	assert_refused(limited(f, STREAM, z, &e), &e, "compressed more than once (gzip inside gzip)");
	blob_free(&gz);
	blob_free(&z);
	blob_free(&tar);
}

/* zstd's window: 128 MiB at most (libzstd's default, which libarchive
 * keeps).  Not a change of this code, the bound it relies on. */
static void test_a_zstd_window_over_128_mib_is_refused(void **state)
{
	struct fx *f = *state;
	struct blob tar = small_tar(), l = zstd_frame(tar, 27);
	struct err e;

	assert_int_equal(limited(f, STREAM, l, &e), 0);
	blob_free(&l);
	l = zstd_frame(tar, 28);
	assert_refused(limited(f, STREAM, l, &e), &e,
		       "layer 2 (sha256:x): Zstd decompression failed: Frame requires too much memory");
	blob_free(&l);
	l = zstd_frame(tar, 0);
	assert_refused(limited(f, STREAM, l, &e), &e, "Frame requires too much memory");
	blob_free(&l);
	blob_free(&tar);
}

/* ---- archives given as --image FILE ------------------------------------------- */

/* The hostile layer in a docker archive, and the whole archive as such xz. */
static void test_an_archive_or_its_layer_in_xz_is_refused_unread(void **state)
{
	struct fx *f = *state;
	struct blob xz = hostile_xz(), outer;
	struct err e;

	make_docker_archive(f->image, &xz, 1, 0);
	assert_refused(limited(f, UNPACK, xz, &e), &e,
		       "/layer.tar): compressed with xz, whose decoder takes the memory the "
		       "file's own header asks for (up to 4 GiB): refused; decompress it first, or "
		       "recompress it with gzip or zstd");
	assert_non_null(strstr(e.msg, "layer 1 ("));
	blob_free(&xz);
	/* The archive itself: refused before libarchive reads it. */
	outer = small_tar();
	make_docker_archive(f->image, &outer, 1, 0);
	blob_free(&outer);
	outer.data = read_file(f->image, &outer.len);
	assert_non_null(outer.data);
	xz = compress_as(outer, "xz", "xz:compression-level=0");
	write_blob(f->image, xz);
	assert_refused(limited(f, UNPACK, xz, &e), &e, "compressed with xz, whose decoder");
	assert_non_null(strstr(e.msg, f->image));
	blob_free(&outer);
	blob_free(&xz);
}

static struct blob whole_gz(struct blob b)
{
	return compress_as(b, "gzip", NULL);
}

/* lzma and lzip refused as xz; bzip2, compress and lz4 (a few MiB at most),
 * gzip and zstd unpacked, as a layer and as the whole archive; an archive
 * compressed twice refused. */
static void test_an_archive_may_use_the_bounded_decompressors(void **state)
{
	static const char *const refused[] = { "lzma", "lzip" };
	static const char *const bounded[] = { "bzip2", "compress", "lz4", "gzip", "zstd" };
	struct fx *f = *state;
	struct blob tar = small_tar(), l, outer, twice;
	char want[128];
	struct err e;

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		l = compress_as(tar, refused[i], NULL);
		make_docker_archive(f->image, &l, 1, 0);
		snprintf(want, sizeof(want), "compressed with %s, whose decoder", refused[i]);
		assert_refused(limited(f, UNPACK, l, &e), &e, want);
		blob_free(&l);
	}
	for (size_t i = 0; i < sizeof(bounded) / sizeof(*bounded); i++) {
		l = compress_as(tar, bounded[i], NULL);
		make_docker_archive(f->image, &l, 1, 0);
		blob_free(&l);
		outer.data = read_file(f->image, &outer.len);
		assert_non_null(outer.data);
		/* The layer so compressed, then the archive too (each once). */
		for (int whole = 0; whole < 2; whole++) {
			l = whole ? compress_as(outer, bounded[i], NULL) : outer;
			write_blob(f->image, l);
			if (limited(f, UNPACK, l, &e) != 0)
				fail_msg("%s, %s: %s", bounded[i], whole ? "the archive" : "a layer", e.msg);
			assert_content(in(f, "etc/motd"), "hello\n");
			remove_tree(f->dest);
			assert_int_equal(mkdir(f->dest, 0755), 0);
			if (whole)
				blob_free(&l);
		}
		/* The compressed archive compressed again (gzip inside it). */
		l = whole_gz(outer);
		twice = compress_as(l, bounded[i], NULL);
		blob_free(&l);
		write_blob(f->image, twice);
		snprintf(want, sizeof(want), "compressed more than once (gzip inside %s", bounded[i]);
		assert_refused(limited(f, UNPACK, twice, &e), &e, want);
		blob_free(&twice);
		blob_free(&outer);
	}
	blob_free(&tar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_pulled_xz_layer_asking_4_gib_is_refused_unread,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_pulled_layer_is_a_tar_gzip_or_zstd_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_pulled_layer_compressed_twice_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_zstd_window_over_128_mib_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_an_archive_or_its_layer_in_xz_is_refused_unread,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_archive_may_use_the_bounded_decompressors,
						setup, teardown),
	};
	struct err e = { 0 };

	/* Names such as archive_write_header are archive_dl's table here. */
	if (archive_dl_load(&e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
