/* Unit tests of layer reuse's choice of a stored image (registry/reuse.c):
 * a record matches only when its layers are the first of the new image's,
 * whole, in order, and fewer than all of them; the record written for an
 * image reads back as its own layers; the store's image with the most
 * shared layers is chosen, and one whose squashfs is gone or planted by
 * another user is not. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctrtest.h"
#include "reuse.h"
#include "store.h"
#include "rootpath.h"

#define D(c) "sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
	c c c c c c c c c c c c c c c c c c c c c c c c c

static struct descriptor layers[4];

static struct manifest image(size_t n)
{
	const char *d[] = { D("a"), D("b"), D("c"), D("d") };

	for (size_t i = 0; i < 4; i++)
		snprintf(layers[i].digest, sizeof(layers[i].digest), "%s", d[i]);
	return (struct manifest){ .kind = MANIFEST_IMAGE, .layers = layers, .nlayers = n };
}

static size_t prefix(const char *text, size_t n)
{
	struct manifest m = image(n);

	return reuse_prefix(text, strlen(text), &m);
}

static void test_a_record_matches_a_proper_prefix(void **state)
{
	(void)state;
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "\n", 3), 1);
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "\n" D("b") "\n", 3), 2);
	/* All of the image's layers: that image itself, nothing to build. */
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "\n" D("b") "\n" D("c") "\n", 3), 0);
	/* Another order, another layer, more layers, a cut line, no magic. */
	assert_int_equal(prefix("ctrun-layers 1\n" D("b") "\n", 3), 0);
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "\n" D("c") "\n", 3), 0);
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "\n" D("b") "\n" D("c") "\n" D("d") "\n",
				3), 0);
	assert_int_equal(prefix("ctrun-layers 1\n" D("a"), 3), 0);
	assert_int_equal(prefix("ctrun-layers 1\n" D("a") "x\n", 3), 0);
	assert_int_equal(prefix(D("a") "\n", 3), 0);
	assert_int_equal(prefix("ctrun-layers 1\n", 3), 0);
	assert_int_equal(prefix("", 3), 0);
}

static void test_a_written_record_reads_back(void **state)
{
	struct manifest m = image(2), longer = image(4);
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(reuse_record_text(&m, &text, &len), 0);
	assert_int_equal(reuse_prefix(text, len, &longer), 2);
	assert_int_equal(reuse_prefix(text, len, &m), 0);
	free(text);
}

/* What the image feed accepts as a record: the magic line and whole lines
 * of digests, nothing else. */
static void test_a_record_is_valid(void **state)
{
	struct manifest m = image(3);
	char *text, big[REUSE_RECORD_MAX + 100];
	size_t len;

	(void)state;
	assert_int_equal(reuse_record_text(&m, &text, &len), 0);
	assert_true(reuse_record_valid(text, len));
	assert_false(reuse_record_valid(text, len - 1)); /* a cut line */
	free(text);
#define V(t) reuse_record_valid(t, sizeof(t) - 1)
	assert_true(V("ctrun-layers 1\n" D("a") "\n"));
	assert_false(V("ctrun-layers 1\n"));                   /* no layer */
	assert_false(V("ctrun-layers 2\n" D("a") "\n"));        /* another format */
	assert_false(V("ctrun-layers 1\n" D("a") "x\n"));       /* no digest */
	assert_false(V("ctrun-layers 1\n" D("a") "\n\n"));      /* an empty line */
	assert_false(V("ctrun-layers 1\nsha256:../../etc\n"));
	assert_false(V("ctrun-layers 1\n" D("a") "\0\n"));
#undef V
	/* Larger than any record read. */
	memcpy(big, "ctrun-layers 1\n", 15);
	for (len = 15; len + 72 <= sizeof(big); len += 72)
		memcpy(big + len, D("a") "\n", 72);
	assert_true(len > REUSE_RECORD_MAX);
	assert_false(reuse_record_valid(big, len));
}

/* A record written from its text (what the feed carries) is the record a
 * pull writes, and reads back; a missing or planted one reads as none. */
static void test_a_record_text_written_reads_back(void **state)
{
	char store[128], sqsh[PATH_MAX], rec[PATH_MAX];
	struct manifest m = image(2);
	struct err e = { 0 };
	char *text, *got;
	size_t len, glen;

	(void)state;
	strcpy(store, "/tmp/ctrun-test-reuse-XXXXXX");
	assert_non_null(mkdtemp(store));
	assert_int_equal(store_init(store, &e), 0);
	assert_int_equal(store_image(store, D("1"), sqsh, sizeof(sqsh), &e), 0);
	assert_int_equal(reuse_record_read(store, sqsh, &got, &glen, &e), 0);
	assert_int_equal(reuse_record_text(&m, &text, &len), 0);
	assert_int_equal(reuse_record_write_text(store, sqsh, text, len, &e), 0);
	assert_int_equal(reuse_record_read(store, sqsh, &got, &glen, &e), 1);
	assert_int_equal(glen, len);
	assert_memory_equal(got, text, len);
	free(got);
	free(text);
	snprintf(rec, sizeof(rec), "%.*s.layers", (int)(strlen(sqsh) - 5), sqsh);
	assert_int_equal(unlink(rec), 0);
	assert_int_equal(symlink("/etc/passwd", rec), 0);
	assert_int_equal(reuse_record_read(store, sqsh, &got, &glen, &e), 0);
	assert_null(got);
	remove_tree(store);
}

/* A store with an image of layers a and one of a, b (each a squashfs and its
 * record), and a record whose squashfs is missing. */
static void test_the_longest_stored_prefix_is_chosen(void **state)
{
	char store[128], sqsh[PATH_MAX], digest[80];
	const char *names[] = { D("1"), D("2"), D("3") };
	struct err e = { 0 };
	struct manifest m4 = image(4);
	size_t k;

	(void)state;
	strcpy(store, "/tmp/ctrun-test-reuse-XXXXXX");
	assert_non_null(mkdtemp(store));
	assert_int_equal(store_init(store, &e), 0);
	for (size_t i = 0; i < 3; i++) {
		struct manifest m = image(i + 1);
		int fd;

		assert_int_equal(store_image(store, names[i], sqsh, sizeof(sqsh), &e), 0);
		if (i < 2) { /* the third's squashfs is gone */
			fd = open(sqsh, O_WRONLY | O_CREAT, 0644);
			assert_true(fd >= 0);
			close(fd);
		}
		assert_int_equal(reuse_record_write(store, sqsh, &m, &e), 0);
	}
	assert_int_equal(reuse_find(store, &m4, digest, sizeof(digest), &k, &e), 1);
	assert_int_equal(k, 2);
	assert_string_equal(digest, names[1]);
	/* An image of one layer has nothing below it to reuse. */
	m4.nlayers = 1;
	assert_int_equal(reuse_find(store, &m4, digest, sizeof(digest), &k, &e), 0);
	/* A link planted at a record's name is not read. */
	m4.nlayers = 4;
	assert_int_equal(store_image(store, names[1], sqsh, sizeof(sqsh), &e), 0);
	strcpy(sqsh + strlen(sqsh) - 5, ".layers");
	assert_int_equal(unlink(sqsh), 0);
	assert_int_equal(symlink("/etc/passwd", sqsh), 0);
	assert_int_equal(reuse_find(store, &m4, digest, sizeof(digest), &k, &e), 1);
	assert_int_equal(k, 1);
	assert_string_equal(digest, names[0]);
	remove_tree(store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_record_matches_a_proper_prefix),
		cmocka_unit_test(test_a_written_record_reads_back),
		cmocka_unit_test(test_a_record_is_valid),
		cmocka_unit_test(test_a_record_text_written_reads_back),
		cmocka_unit_test(test_the_longest_stored_prefix_is_chosen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
